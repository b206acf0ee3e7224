import { z } from "zod";
import { ChatAddressString, CronCreateRequest, CronMissedPolicy, CronPayload, CronSchedule, CronUpdateRequest } from "@nahida/contracts";
import type { CronJob } from "@nahida/db";
import { defineTool, type LedgerReader, type ToolContext } from "@nahida/plugin-sdk";

/**
 * Which jobs the agent's cron tools reach: `chat` (default) only the current chat's, so a
 * model in one chat can neither see nor change another chat's schedules; `all` any target.
 */
export type CronToolScope = "chat" | "all";

export interface CronToolsOptions {
  cron: LedgerReader["cron"];
  scope: CronToolScope;
}

const jobSummary = (job: CronJob) => ({
  id: job.id,
  name: job.name,
  target: job.target,
  schedule: job.schedule,
  tz: job.tz,
  payload: job.payload,
  enabled: job.enabled,
  next_run_at: job.enabled ? (job.nextRunAt?.toISOString() ?? null) : null,
  disabled_reason: job.disabledReason,
});

const LIST_LIMIT = 50;

/** The cron_* tools: every write is checked when the tool calls and made in the run's commit. */
export function cronTools(o: CronToolsOptions) {
  /** The target a call may act on, or why not. */
  function allowedTarget(context: ToolContext, target: string | undefined): { ok: true; target: string } | { ok: false; error: string } {
    const own = context.chatAddress;
    const wanted = target ?? own;
    if (!wanted) return { ok: false, error: "this session has no chat; give target" };
    if (o.scope === "chat" && wanted !== own) return { ok: false, error: `cron jobs can only be managed for this chat (${own}) here` };
    return { ok: true, target: wanted };
  }

  /** The job, if this call may touch it; an error the model can read otherwise. */
  async function reachable(context: ToolContext, id: string): Promise<CronJob> {
    const job = await o.cron.get(id);
    if (!job || (o.scope === "chat" && job.target !== context.chatAddress)) throw new Error(`no cron job ${id} for this chat; cron_list shows the ids`);
    return job;
  }

  return [
    defineTool({
      name: "cron_create",
      description:
        "Schedule a notification (payload kind notify: fixed text sent to the chat) or an agent turn (payload kind agent_turn: the prompt is given to you at each slot and your answer is sent). " +
        "schedule: {kind:'cron', expr:'0 9 * * 1-5', tz?:'Europe/Berlin'} | {kind:'every', every_ms} | {kind:'at', at:'2026-12-24T18:00:00'}. The target defaults to this chat. The job exists once this reply is sent.",
      parameters: z.object({
        name: z.string().min(1).max(100),
        schedule: CronSchedule,
        payload: CronPayload,
        target: ChatAddressString.optional().describe("typed chat address; default: this chat"),
        missed: CronMissedPolicy.optional(),
        max_runs: z.number().int().min(1).optional(),
        end_at: z.iso.datetime({ offset: true }).optional(),
      }),
      async execute(args, context) {
        const target = allowedTarget(context, args.target);
        if (!target.ok) throw new Error(target.error);
        const request = CronCreateRequest.safeParse({ ...args, target: target.target });
        if (!request.success) throw new Error(request.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "));
        const created = await context.outbox.createCron(request.data);
        if (!created.ok) throw new Error(created.error.message);
        return { id: created.value.jobId, name: args.name, target: target.target, next_run_at: created.value.nextRunAt?.toISOString() ?? null };
      },
    }),
    defineTool({
      name: "cron_list",
      description: "List the cron jobs of this chat (or, where allowed, of a given target).",
      parameters: z.object({ target: ChatAddressString.optional() }),
      async execute({ target }, context) {
        let filter: { target?: string } = {};
        if (o.scope === "chat" || target) {
          const allowed = allowedTarget(context, target);
          if (!allowed.ok) throw new Error(allowed.error);
          filter = { target: allowed.target };
        }
        const page = await o.cron.list({ ...filter, limit: LIST_LIMIT, offset: 0 });
        return { jobs: page.jobs.map(jobSummary), total: page.total };
      },
    }),
    defineTool({
      name: "cron_update",
      description: "Change a cron job of this chat: name, schedule, payload, enabled (pause or resume), missed, max_runs, end_at. A new schedule counts from now.",
      parameters: z.object({
        id: z.uuid(),
        name: z.string().min(1).max(100).optional(),
        schedule: CronSchedule.optional(),
        payload: CronPayload.optional(),
        enabled: z.boolean().optional(),
        missed: CronMissedPolicy.optional(),
        max_runs: z.number().int().min(1).nullable().optional(),
        end_at: z.iso.datetime({ offset: true }).nullable().optional(),
      }),
      async execute({ id, ...changes }, context) {
        await reachable(context, id);
        const request = CronUpdateRequest.safeParse(Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)));
        if (!request.success) throw new Error(request.error.issues.map((i) => `${i.path.join(".") || "(changes)"}: ${i.message}`).join("; "));
        const updated = await context.outbox.updateCron(id, request.data);
        if (!updated.ok) throw new Error(updated.error.message);
        return { id, updated: Object.keys(request.data) };
      },
    }),
    defineTool({
      name: "cron_delete",
      description: "Delete a cron job of this chat and its history.",
      parameters: z.object({ id: z.uuid() }),
      async execute({ id }, context) {
        const job = await reachable(context, id);
        const deleted = await context.outbox.deleteCron(id);
        if (!deleted.ok) throw new Error(deleted.error.message);
        return { id, name: job.name, deleted: true };
      },
    }),
  ];
}
