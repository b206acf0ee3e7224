import { err, ok, type CronPayload, type Result, type ScheduledTurnMetadata } from "@nahida/contracts";
import { readCronJob } from "@nahida/cron";
import type { CronJob, CronRepository, CronRun } from "@nahida/db";
import { unanswered } from "../agent-call";
import { scheduledCommandContext, type ChatCommandsOptions } from "../chat-commands";
import { finishCronRunEffect } from "../effects/finish-cron-run.effect";
import type { Run } from "../run";
import { defineLaneKind } from "./lane-kind";

/** A cron job's agent turn or command waiting in the lane: its run row and the job it belongs to. */
export interface ScheduledWork {
  run: CronRun;
  job: CronJob;
  payload: Extract<CronPayload, { kind: "agent_turn" | "command" }>;
}

/** Reads one cron run for its lane item; a job deleted after it fired takes its runs with it. */
async function loadOne(cron: CronRepository, cronRunId: string): Promise<Result<ScheduledWork, string>> {
  const found = await cron.getRun(cronRunId);
  if (!found) return err(`cron run ${cronRunId} does not exist (its job was deleted)`);
  const { job, ...run } = found;
  const read = readCronJob(job);
  if (!read.ok) return err(read.error);
  const payload = read.value.payload;
  if (payload.kind === "notify") return err(`cron job ${job.id} is a notify job, which puts nothing into a lane`);
  return ok({ run, job, payload });
}

type Finish = (outcome: { status: "succeeded" | "failed"; error?: string; deliveryIds?: string[] }) => void;

/**
 * A cron job's agent turn: the prompt is stored as a scheduled event (source `cron:<job>`,
 * never a user turn) and shown to the model in its own envelope; the answer goes to the
 * run's output when the job delivers.
 */
async function answerPrompt(run: Run, { run: cronRun, job }: ScheduledWork, payload: Extract<CronPayload, { kind: "agent_turn" }>, finish: Finish): Promise<void> {
  const sessionId = run.sessionId;
  const source = `cron:${job.id}`;
  const metadata: ScheduledTurnMetadata = { kind: "scheduled_turn", cron_job_id: job.id, cron_run_id: cronRun.id, job_name: job.name, slot: cronRun.slot.toISOString() };
  const answer = await run.callAgent(sessionId, [{ role: "event", content: payload.prompt, source, metadata }]);
  const error = unanswered(answer);
  if (error !== null) return finish({ status: "failed", error });
  // Stopped or suppressed: the turn ran, and nothing is sent.
  const deliveryId = answer.kind === "text" && payload.deliver ? run.answer({ text: answer.text }, { source, sessionId }) : null;
  finish({ status: "succeeded", deliveryIds: deliveryId ? [deliveryId] : [] });
}

/**
 * A cron job's command (`/weather Berlin`), run through the command router in the target
 * chat as nobody: no sender roles, and nothing of the chat changes (scheduledCommandContext).
 * An unknown command or one that fails fails the cron run with the reason.
 */
async function runCommand(o: ChatCommandsOptions, run: Run, { job }: ScheduledWork, payload: Extract<CronPayload, { kind: "command" }>, finish: Finish): Promise<void> {
  if (!run.scope.chat) return finish({ status: "failed", error: `the session of ${job.target} has no chat to run ${payload.command} in` });
  const outcome = await o.commands.run(payload.command, scheduledCommandContext(o, run), run.lane.signal);
  if (outcome.kind === "not_a_command") return finish({ status: "failed", error: `no command ${payload.command.split(/\s/)[0]} in this deployment` });
  if (outcome.kind === "failed") return finish({ status: "failed", error: outcome.error });
  const reply = outcome.reply;
  const deliveryId = reply && payload.deliver ? run.answer({ ...reply, text: reply.text ?? "" }, { source: `cron:${job.id}`, sessionId: run.sessionId }) : null;
  finish({ status: "succeeded", deliveryIds: deliveryId ? [deliveryId] : [] });
}

/** One cron item: its outcome is written on the cron run in the run's commit. */
async function handleScheduled(o: ScheduledTurnOptions, run: Run, work: ScheduledWork): Promise<void> {
  const finish: Finish = (outcome) => run.uow.emit(finishCronRunEffect, { cronRunId: work.run.id, sessionId: run.sessionId, ...outcome });
  const { payload } = work;
  switch (payload.kind) {
    case "agent_turn":
      return answerPrompt(run, work, payload, finish);
    case "command":
      return runCommand(o, run, work, payload, finish);
    default: {
      const unreachable: never = payload;
      throw new Error(`unknown cron payload ${JSON.stringify(unreachable)}`);
    }
  }
}

export interface ScheduledTurnOptions extends ChatCommandsOptions {
  cron: CronRepository;
}

export function scheduledTurnKind(o: ScheduledTurnOptions) {
  return defineLaneKind<ScheduledWork>({
    kind: "scheduled_turn",
    async load(refIds) {
      const loaded = await Promise.all(refIds.map((id) => loadOne(o.cron, id)));
      return new Map(refIds.map((id, index) => [id, loaded[index]!]));
    },
    async handle(items, run) {
      for (const item of items) await handleScheduled(o, run, item.row);
    },
  });
}
