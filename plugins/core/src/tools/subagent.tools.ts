import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { TaskContextMode, isTerminalTask, type BackgroundTask } from "@nahida/contracts";
import { defineTool, type LedgerReader, type ToolContext } from "@nahida/plugin-sdk";
import { Id } from "./tool-args";

export interface SubagentToolsOptions {
  tasks: LedgerReader["tasks"];
  /** The tools registered in this worker, to check a spawn's `tools` against. */
  toolNames: () => string[];
  /** How often a waiting `agent_wait` looks at its tasks. */
  pollMs?: number;
}

/** Tools a sub-agent never gets, whatever its spawn asks (SPEC §4: the denylist). */
export const SUBAGENT_DENIED_TOOLS = ["message", "sessions_send", "agent_spawn", "agent_wait", "agent_yield", "agent_list", "agent_stop"] as const;

const WAIT_MAX_SECONDS = 60;
const LIST_LIMIT = 20;
const PREVIEW_CHARS = 300;

/** What the parent reads of a child. */
function taskView(task: BackgroundTask, full: boolean) {
  const text = task.result ?? "";
  return {
    task_id: task.id,
    child_session_id: task.childSessionId,
    label: task.label,
    status: task.status,
    ...(task.result !== null ? { result: full ? text : text.slice(0, PREVIEW_CHARS) + (text.length > PREVIEW_CHARS ? "…" : "") } : {}),
    ...(task.error !== null ? { error: task.error } : {}),
    ...(task.consumedBy !== null ? { reported: task.consumedBy } : {}),
    created_at: task.createdAt.toISOString(),
    finished_at: task.finishedAt?.toISOString() ?? null,
  };
}

/**
 * `agent_spawn`'s arguments; OpenClaw's `sessions_spawn` names (`runTimeoutSeconds`) are
 * read too, so skills written for it work.
 */
const SpawnArguments = z.preprocess(
  (raw) => {
    if (typeof raw !== "object" || raw === null) return raw;
    const { runTimeoutSeconds, ...rest } = raw as Record<string, unknown>;
    return "timeout_seconds" in rest || runTimeoutSeconds === undefined ? rest : { ...rest, timeout_seconds: runTimeoutSeconds };
  },
  z.object({
    task: z.string().min(1).max(20_000).describe("what the sub-agent is to do; it sees only this (and with context 'fork', this conversation)"),
    label: z.string().min(1).max(100).optional().describe("a short name for it"),
    instructions: z.string().min(1).max(20_000).optional().describe("how to go about it"),
    context: TaskContextMode.default("isolated").describe("'fork' also gives it this conversation so far"),
    timeout_seconds: z.number().int().min(1).max(86_400).optional(),
    tools: z.array(z.string().min(1).max(64)).max(64).optional().describe("narrow its tools to these names"),
  }),
);

/**
 * The sub-agent tools of a depth-0 run (docs/subagents.md): spawn a child that works in its
 * own session, wait for it inline, yield this turn until all children are done, list and
 * stop them. A child gets none of these (nor `message` or `sessions_send`).
 */
export function subagentTools(o: SubagentToolsOptions) {
  const pollMs = o.pollMs ?? 200;
  const mainOnly = (context: ToolContext) => !context.subagent;

  /** This session's own children among `ids`; another session's task is an error that names it. */
  async function ownTasks(context: ToolContext, ids: readonly string[]): Promise<BackgroundTask[]> {
    const tasks = await o.tasks.getMany(ids);
    const foreign = ids.filter((id) => !tasks.some((t) => t.id === id && t.parentSessionId === context.sessionId));
    if (foreign.length > 0) throw new Error(`no task ${foreign.join(", ")} was started by this session; agent_list shows yours`);
    return ids.map((id) => tasks.find((t) => t.id === id)!);
  }

  return [
    defineTool({
      name: "agent_spawn",
      aliases: ["sessions_spawn"],
      description:
        "Start a sub-agent on a task in its own session, in the background; returns at once with its task_id. " +
        "Its result comes back to you once: inline from agent_wait, or when you resume after agent_yield, or else as a turn of its own when it finishes. " +
        "It cannot message chats, send to sessions or spawn.",
      parameters: SpawnArguments,
      permitted: mainOnly,
      async execute(args, context) {
        if (args.tools) {
          const known = new Set(o.toolNames());
          const denied = args.tools.filter((t) => (SUBAGENT_DENIED_TOOLS as readonly string[]).includes(t));
          if (denied.length > 0) throw new Error(`a sub-agent cannot have ${denied.join(", ")}`);
          const unknown = args.tools.filter((t) => !known.has(t));
          if (unknown.length > 0) throw new Error(`unknown tools ${unknown.join(", ")}; known: ${[...known].filter((t) => !(SUBAGENT_DENIED_TOOLS as readonly string[]).includes(t)).join(", ")}`);
        }
        const spawned = await context.outbox.spawnTask({
          task: args.task,
          context: args.context,
          ...(args.label !== undefined ? { label: args.label } : {}),
          ...(args.instructions !== undefined ? { instructions: args.instructions } : {}),
          ...(args.timeout_seconds !== undefined ? { timeoutSeconds: args.timeout_seconds } : {}),
          ...(args.tools !== undefined ? { tools: args.tools } : {}),
        });
        if (!spawned.ok) throw new Error(spawned.error.message);
        const { task } = spawned.value;
        return {
          task_id: task.id,
          child_session_id: task.childSessionId,
          status: task.status,
          note: task.status === "queued" ? "queued: every sub-agent slot of the deployment is busy; it starts when one frees" : "started",
        };
      },
    }),
    defineTool({
      name: "agent_wait",
      description: `Wait up to timeout_seconds (0-${WAIT_MAX_SECONDS}) for your sub-agents to finish; returns each one's status, and the result of those that finished (taken here: no separate turn follows for them).`,
      parameters: z.object({
        task_ids: z.array(Id).min(1).max(20),
        timeout_seconds: z.number().int().min(0).max(WAIT_MAX_SECONDS).default(30),
      }),
      permitted: mainOnly,
      async execute(args, context) {
        const ids = [...new Set(args.task_ids)];
        const deadline = Date.now() + args.timeout_seconds * 1_000;
        let tasks = await ownTasks(context, ids);
        while (!tasks.every((t) => isTerminalTask(t.status)) && Date.now() < deadline) {
          await sleep(Math.min(pollMs, Math.max(0, deadline - Date.now())), undefined, { signal: context.signal });
          tasks = await ownTasks(context, ids);
        }
        const finished = tasks.filter((t) => isTerminalTask(t.status));
        const untaken = finished.filter((t) => t.consumedBy === null).map((t) => t.id);
        const taken = new Set(context.outbox.takeResults(untaken));
        // A result this run already had as a turn of its own is not given twice.
        const earlier = new Set(untaken.filter((id) => !taken.has(id)));
        const open = tasks.length - finished.length;
        return {
          tasks: tasks.map((t) => (earlier.has(t.id) ? { ...taskView(t, false), result: undefined, reported: "earlier in this conversation" } : taskView(t, true))),
          ...(open > 0 ? { note: `${open} still running after ${args.timeout_seconds} s; their results come later (agent_wait again, or agent_yield)` } : {}),
        };
      },
    }),
    defineTool({
      name: "agent_yield",
      description:
        "End this turn now and resume when every sub-agent you started has finished, with all their results together. Do not answer after calling it.",
      parameters: z.object({ note: z.string().max(2_000).optional().describe("for your own record: why you are waiting") }),
      permitted: mainOnly,
      async execute(_args, context) {
        const open = await context.outbox.openChildren();
        if (open.length === 0) throw new Error("nothing to wait for: no sub-agent of this session is running or has a result you have not had");
        context.outbox.yieldForChildren();
        context.endTurn();
        return { waiting_for: open.map((t) => ({ task_id: t.id, label: t.label, status: t.status })), note: "this turn ends now; you resume with every result once all have finished" };
      },
    }),
    defineTool({
      name: "agent_list",
      description: "Your sub-agents, newest first: status, and a preview of each result.",
      parameters: z.object({ limit: z.number().int().min(1).max(LIST_LIMIT).default(LIST_LIMIT) }),
      permitted: mainOnly,
      async execute(args, context) {
        return { tasks: (await o.tasks.listByParent(context.sessionId, args.limit)).map((t) => taskView(t, false)) };
      },
    }),
    defineTool({
      name: "agent_stop",
      description: "Stop a sub-agent of yours (task_id), or all that are still running ('all'). They end when this turn ends; you are not told their results.",
      parameters: z.object({ task_id: z.union([z.literal("all"), Id]) }),
      permitted: mainOnly,
      async execute(args, context) {
        const tasks = args.task_id === "all" ? await context.outbox.openChildren() : await ownTasks(context, [args.task_id]);
        const open = tasks.filter((t) => !isTerminalTask(t.status));
        context.outbox.stopTasks(open.map((t) => t.id));
        return { stopping: open.map((t) => t.id), ...(open.length < tasks.length ? { already_finished: tasks.filter((t) => isTerminalTask(t.status)).map((t) => t.id) } : {}) };
      },
    }),
  ];
}
