import { err, ok, type CronPayload, type Result, type ScheduledTurnMetadata } from "@nahida/contracts";
import { readCronJob } from "@nahida/cron";
import type { CronJob, CronRepository, CronRun } from "@nahida/db";
import { unanswered } from "../agent-call";
import { finishCronRunEffect } from "../effects/finish-cron-run.effect";
import type { Run } from "../run";
import { defineLaneKind } from "./lane-kind";

/** A cron job's agent turn waiting in the lane: its run row and the job it belongs to. */
export interface ScheduledWork {
  run: CronRun;
  job: CronJob;
  payload: Extract<CronPayload, { kind: "agent_turn" }>;
}

/** Reads one cron run for its lane item; a job deleted after it fired takes its runs with it. */
async function loadOne(cron: CronRepository, cronRunId: string): Promise<Result<ScheduledWork, string>> {
  const found = await cron.getRun(cronRunId);
  if (!found) return err(`cron run ${cronRunId} does not exist (its job was deleted)`);
  const { job, ...run } = found;
  const read = readCronJob(job);
  if (!read.ok) return err(read.error);
  const payload = read.value.payload;
  if (payload.kind !== "agent_turn") return err(`cron job ${job.id} is a ${payload.kind} job, not an agent turn`);
  return ok({ run, job, payload });
}

/**
 * A cron job's agent turn: the prompt is stored as a scheduled event (source `cron:<job>`,
 * never a user turn) and shown to the model in its own envelope; the answer goes to the
 * run's output when the job delivers. The cron run's outcome is written in the run's commit.
 */
async function answerScheduled(run: Run, { run: cronRun, job, payload }: ScheduledWork): Promise<void> {
  const sessionId = run.sessionId;
  const source = `cron:${job.id}`;
  const metadata: ScheduledTurnMetadata = { kind: "scheduled_turn", cron_job_id: job.id, cron_run_id: cronRun.id, job_name: job.name, slot: cronRun.slot.toISOString() };
  const answer = await run.callAgent(sessionId, [{ role: "event", content: payload.prompt, source, metadata }]);
  const finish = (outcome: { status: "succeeded" | "failed"; error?: string; deliveryIds?: string[] }) =>
    run.uow.emit(finishCronRunEffect, { cronRunId: cronRun.id, sessionId, ...outcome });
  const error = unanswered(answer);
  if (error !== null) return finish({ status: "failed", error });
  // Stopped or suppressed: the turn ran, and nothing is sent.
  const deliveryId = answer.kind === "text" && payload.deliver ? run.answer({ text: answer.text }, { source, sessionId }) : null;
  finish({ status: "succeeded", deliveryIds: deliveryId ? [deliveryId] : [] });
}

export function scheduledTurnKind(o: { cron: CronRepository }) {
  return defineLaneKind<ScheduledWork>({
    kind: "scheduled_turn",
    async load(refIds) {
      const loaded = await Promise.all(refIds.map((id) => loadOne(o.cron, id)));
      return new Map(refIds.map((id, index) => [id, loaded[index]!]));
    },
    async handle(items, run) {
      for (const item of items) await answerScheduled(run, item.row);
    },
  });
}
