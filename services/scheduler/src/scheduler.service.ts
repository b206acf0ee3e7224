import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Clock, CronPayload, CronSchedule } from "@nahida/contracts";
import { jitterFor, planFire, type ResolvedSchedule } from "@nahida/cron";
import { isOutage, type CronAdvance, type CronJob, type CronRepository, type CronRun, type NewCronRun, type Tx } from "@nahida/db";
import type { Logger } from "@nahida/observability";
import { writeCronEffect, type CronEffectsOptions, type EffectIds } from "./cron-effects";

/** Waits before a failed fire is tried again; after the last, the fire is recorded failed. */
export const CRON_RETRY_BACKOFF_MS: readonly number[] = [30_000, 60_000, 300_000];

export interface SchedulerOptions extends CronEffectsOptions {
  cron: CronRepository;
  transaction: <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>;
  /** Wakes a lane after the commit that appended to it. */
  wakeLane: (laneKey: string) => Promise<void>;
  clock: Clock;
  logger: Logger;
  /** Longest sleep between looks at the table; a due job wakes it earlier. */
  pollMs: number;
  /** Consecutive failed fires after which a job is disabled (and its chat told once). */
  maxFailures: number;
  /** Jobs claimed per transaction. Default 100. */
  batchSize?: number;
  /** How often runs waiting for an outcome are checked. Default 1 s. */
  finishEveryMs?: number;
  retryBackoffMs?: readonly number[];
  /**
   * The heartbeat standing still this long means no scheduler ran: the slots due meanwhile
   * were missed (and follow their jobs' policy) rather than late. Default 5 s, or ten polls.
   */
  outageAfterMs?: number;
}

const DEFAULT_OUTAGE_AFTER_MS = 5_000;

export interface TickResult {
  /** When the earliest enabled job is due next, as seen after this pass. */
  nextDueAt: Date | null;
  fired: number;
  recorded: number;
  started: number;
  finished: number;
}

export interface Scheduler {
  /** One pass over the table (the loop calls it; tests with a set clock call it directly). */
  tick(): Promise<TickResult>;
  /** Starts the loop: a tick, then a sleep until the next due job (at most `pollMs`). */
  start(): void;
  /** Stops the loop after the tick in progress. */
  stop(): Promise<void>;
}

interface AfterCommit {
  deliveryIds: string[];
  lanes: Set<string>;
}

const resolvedOf = (job: CronJob): ResolvedSchedule => ({ schedule: job.schedule as CronSchedule, tz: job.tz, anchorAt: job.anchorAt });
const kindOf = (job: CronJob) => (job.payload as CronPayload).kind;

/**
 * The scheduler (docs/scheduler.md). Postgres is the source of truth and the only
 * coordination: a replica claims due jobs with `FOR UPDATE SKIP LOCKED`, and in that one
 * transaction records the slot's run (unique per job and slot), writes its effect (a
 * delivery or a lane item) and moves the job to its next slot. A replica that dies
 * mid-claim rolls back and another claims the job; a committed fire is never repeated,
 * because the job's next slot moved with it. Redis only carries the wake-ups after commit,
 * and the delivery and lane sweepers cover their loss.
 */
export function startScheduler(o: SchedulerOptions): Scheduler {
  const scheduler = createScheduler(o);
  scheduler.start();
  return scheduler;
}

/** The scheduler without its loop; {@link startScheduler} starts it. */
export function createScheduler(o: SchedulerOptions): Scheduler {
  const batchSize = o.batchSize ?? 100;
  const finishEveryMs = o.finishEveryMs ?? 1_000;
  const backoff = o.retryBackoffMs ?? CRON_RETRY_BACKOFF_MS;
  const outageAfterMs = o.outageAfterMs ?? Math.max(DEFAULT_OUTAGE_AFTER_MS, 10 * o.pollMs);
  const log = o.logger;
  let lastFinish = 0;

  async function dispatch(after: AfterCommit): Promise<void> {
    // After the commit; a crash here leaves queued deliveries and lane items that the
    // delivery and lane sweepers pick up.
    if (after.deliveryIds.length) await o.outbox.dispatch(after.deliveryIds);
    for (const lane of after.lanes) await o.wakeLane(lane);
  }

  /** Claims one batch of due jobs and fires them; returns how many jobs it claimed. */
  async function fireDue(now: Date, result: TickResult): Promise<number> {
    const after: AfterCommit = { deliveryIds: [], lanes: new Set() };
    const claimed = await o.transaction(async (tx) => {
      const jobs = await o.cron.claimDue(now, batchSize, tx);
      if (jobs.length === 0) return 0;
      const outages = await o.cron.outagesSince(new Date(now.getTime() - Math.max(...jobs.map((j) => j.catchupWindowMs))), tx);
      const runs: NewCronRun[] = [];
      const advances: CronAdvance[] = [];
      const fires: { job: CronJob; run: NewCronRun & { id: string }; ids: EffectIds }[] = [];
      for (const job of jobs) {
        const resolved = resolvedOf(job);
        const jitter = jitterFor(job.id, job.jitterMs);
        const plan = planFire({
          resolved,
          nextSlot: job.nextSlot ?? now,
          now,
          missed: job.missed === "skip" ? "skip" : "run_once",
          catchupWindowMs: job.catchupWindowMs,
          endAt: job.endAt,
          runsLeft: job.maxRuns === null ? null : Math.max(0, job.maxRuns - job.runCount),
          jitterMs: jitter,
          outages,
        });
        for (const passed of plan.passed) {
          runs.push({
            jobId: job.id,
            slot: passed.slot,
            kind: kindOf(job),
            status: passed.status,
            finishedAt: now,
            error: passed.status === "missed" ? "older than the catch-up window" : "due while no scheduler ran; not fired under the job's missed policy",
          });
        }
        if (plan.unrecorded > 0) log.warn({ jobId: job.id, unrecorded: plan.unrecorded }, "cron job was far behind; passed slots beyond the record cap were counted, not written");
        for (const fire of plan.fires) {
          // Named before the insert, so the run row carries them from the start.
          const ids: EffectIds = { deliveryId: randomUUID(), sessionId: randomUUID() };
          const payload = job.payload as CronPayload;
          const run = {
            id: randomUUID(),
            jobId: job.id,
            slot: fire.slot,
            kind: payload.kind,
            status: "running" as const,
            attempt: 1,
            deliveryIds: payload.kind === "notify" ? [ids.deliveryId] : [],
            sessionId: payload.kind === "agent_turn" && payload.session === "isolated" ? ids.sessionId : null,
          };
          runs.push(run);
          fires.push({ job, run, ids });
        }
        advances.push({
          jobId: job.id,
          nextSlot: plan.next,
          nextRunAt: plan.next ? new Date(plan.next.getTime() + jitter(plan.next)) : null,
          fired: plan.fires.length,
          enabled: plan.next !== null,
        });
      }
      const inserted = await o.cron.insertRuns(runs, tx);
      for (const { job, run, ids } of fires) {
        // A slot that already has a row (a clock far behind moved a job back) is not fired again.
        if (!inserted.has(run.id)) continue;
        result.fired += 1;
        await startEffect(job, { id: run.id, slot: run.slot, attempt: 1, deliveryIds: [] }, ids, now, tx, after, run);
      }
      result.recorded += inserted.size - fires.filter((f) => inserted.has(f.run.id)).length;
      await o.cron.advance(advances, tx);
      return jobs.length;
    });
    await dispatch(after);
    return claimed;
  }

  /**
   * Writes a fire's effect and brings its run row up to date (a new fire's row was inserted
   * with the ids the effect would use: `inserted`, and is left alone when they held). A fire
   * that cannot be written (a channel removed since) fails like a failed send.
   */
  async function startEffect(
    job: CronJob,
    run: Pick<CronRun, "id" | "slot" | "attempt" | "deliveryIds">,
    ids: EffectIds,
    now: Date,
    tx: Tx,
    after: AfterCommit,
    inserted?: Pick<NewCronRun, "deliveryIds" | "sessionId">,
  ): Promise<void> {
    const written = await writeCronEffect(o, job, run, ids, tx);
    if (!written.ok) {
      await failed(job, { ...run, kind: kindOf(job) }, written.error, now, tx, after);
      return;
    }
    const { deliveryId, dispatch, lanes, sessionId } = written.value;
    after.deliveryIds.push(...dispatch);
    for (const lane of lanes) after.lanes.add(lane);
    const deliveryIds = deliveryId ? [...run.deliveryIds, deliveryId] : run.deliveryIds;
    const current = inserted && (inserted.deliveryIds?.[0] ?? null) === deliveryId && (sessionId === null || inserted.sessionId === sessionId);
    if (!current) await o.cron.updateRun(run.id, { status: "running", attempt: run.attempt, deliveryIds, sessionId, retryAt: null }, tx);
  }

  /** A fire whose effect failed: tried again after the next backoff step, or recorded failed. */
  async function failed(job: CronJob, run: Pick<CronRun, "id" | "attempt" | "kind">, error: string, now: Date, tx: Tx, after: AfterCommit): Promise<void> {
    // An agent turn is not fired again: its lane already retried the run with its own backoff.
    const delay = run.kind === "notify" ? backoff[run.attempt - 1] : undefined;
    if (delay !== undefined) {
      await o.cron.updateRun(run.id, { status: "retrying", retryAt: new Date(now.getTime() + delay), error }, tx);
      return;
    }
    await o.cron.updateRun(run.id, { status: "failed", error, finishedAt: now }, tx);
    const failures = await o.cron.recordOutcome(job.id, true, tx);
    if (failures === null || failures < o.maxFailures) return;
    const reason = `disabled after ${failures} failed fires in a row; last error: ${error.slice(0, 500)}`;
    if (!(await o.cron.disable(job.id, reason, tx))) return;
    log.warn({ jobId: job.id, failures }, "cron job disabled after repeated failures");
    const request = {
      target: job.target,
      message: { text: `The scheduled job "${job.name}" was disabled after ${failures} failed runs in a row. Last error: ${error.slice(0, 300)}`, attachments: [], extra: {} },
      source: `cron:${job.id}`,
      idempotencyKey: `cron:${job.id}:disabled:${run.id}`,
    };
    const told = (await o.outbox.check(request, tx)).ok ? await o.outbox.write(request, tx) : null;
    if (told?.ok && told.value.created) after.deliveryIds.push(told.value.delivery.id);
  }

  /** Manual runs and retries that are due. */
  async function startPending(now: Date, result: TickResult): Promise<void> {
    const after: AfterCommit = { deliveryIds: [], lanes: new Set() };
    await o.transaction(async (tx) => {
      for (const { run, job } of await o.cron.claimPendingRuns(now, batchSize, tx)) {
        result.started += 1;
        await startEffect(job, { id: run.id, slot: run.slot, attempt: run.attempt + 1, deliveryIds: run.deliveryIds }, { deliveryId: randomUUID(), sessionId: randomUUID() }, now, tx, after);
      }
    });
    await dispatch(after);
  }

  /** Runs whose delivery finished, or whose agent turn failed. */
  async function finishEffects(now: Date, result: TickResult): Promise<void> {
    const done = await o.cron.finishedEffects(batchSize);
    if (done.length === 0) return;
    const outcomes = new Map(done.map((d) => [d.runId, d.outcome]));
    const after: AfterCommit = { deliveryIds: [], lanes: new Set() };
    await o.transaction(async (tx) => {
      // The jobs are locked first, in id order, so replicas finishing runs of the same jobs
      // (and a job's delete) cannot deadlock.
      for (const { job, ...run } of await o.cron.lockRunning([...outcomes.keys()], tx)) {
        const outcome = outcomes.get(run.id)!;
        result.finished += 1;
        if (outcome.kind === "failed") {
          await failed(job, run, outcome.error, now, tx, after);
          continue;
        }
        await o.cron.updateRun(run.id, { status: "succeeded", finishedAt: now, error: null }, tx);
        if (job.consecutiveFailures > 0) await o.cron.recordOutcome(job.id, false, tx);
        // A finished one-shot (an `at`, or a job at max_runs) with delete_after_run goes away.
        if (job.deleteAfterRun && !job.enabled && job.nextSlot === null) await o.cron.delete(job.id, tx);
      }
    });
    await dispatch(after);
  }

  async function tick(): Promise<TickResult> {
    const now = o.clock.now();
    const outage = await o.cron.beat(now, outageAfterMs);
    if (outage) log.warn({ from: outage.from.toISOString(), to: outage.to.toISOString() }, "no scheduler ran in this span; its slots follow their jobs' missed policy");
    const glance = await o.cron.glance(now);
    const result: TickResult = { nextDueAt: glance.nextDueAt, fired: 0, recorded: 0, started: 0, finished: 0 };
    if (glance.nextDueAt && glance.nextDueAt.getTime() <= now.getTime()) {
      // Batch after batch while full; each a beat, so a long backlog is not taken for an outage.
      while ((await fireDue(now, result)) === batchSize) await o.cron.beat(o.clock.now(), outageAfterMs);
      result.nextDueAt = (await o.cron.glance(now)).nextDueAt;
    }
    if (glance.pendingRuns) await startPending(now, result);
    if (now.getTime() - lastFinish >= finishEveryMs) {
      lastFinish = now.getTime();
      await finishEffects(now, result);
    }
    return result;
  }

  const stopping = new AbortController();
  let loop: Promise<void> | undefined;
  async function run(): Promise<void> {
    while (!stopping.signal.aborted) {
      let waitMs = o.pollMs;
      try {
        const { nextDueAt } = await tick();
        if (nextDueAt) waitMs = Math.min(o.pollMs, Math.max(0, nextDueAt.getTime() - o.clock.now().getTime()));
      } catch (error) {
        // Postgres down or restarting: nothing was committed; look again after a poll.
        log[isOutage(error) ? "warn" : "error"]({ err: (error as Error).message }, "scheduler tick failed");
      }
      await sleep(waitMs, undefined, { signal: stopping.signal }).catch(() => undefined);
    }
  }

  return {
    tick,
    start() {
      loop ??= run();
    },
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}
