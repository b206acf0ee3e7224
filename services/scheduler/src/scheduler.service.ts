import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Clock, Readiness } from "@nahida/contracts";
import { PASSED_REASON_TEXT, jitterFor, planFire, readCronJob, type StoredCronJob } from "@nahida/cron";
import { isOutage, newRowId, type CronAdvance, type CronJob, type CronRepository, type CronRun, type NewCronRun, type Tx } from "@nahida/db";
import type { CronMetrics, Logger } from "@nahida/observability";
import { laneKeyOf, writeCronEffect, type CronEffectsOptions, type EffectIds } from "./cron-effects";

/** Waits before a failed fire is tried again; after the last, the fire is recorded failed. */
export const CRON_RETRY_BACKOFF_MS: readonly number[] = [30_000, 60_000, 300_000];

export interface SchedulerOptions extends CronEffectsOptions {
  cron: CronRepository;
  transaction: <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>;
  /** Wakes a lane after the commit that appended to it. */
  wakeLane: (laneKey: string) => Promise<void>;
  clock: Clock;
  logger: Logger;
  /** Fires by outcome and the lag from slot to effect. */
  metrics?: CronMetrics;
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
   * were missed (and follow their jobs' policy) rather than late. Default 15 s, or ten
   * polls; a shorter outage's slots fire late instead.
   */
  outageAfterMs?: number;
  /** Shortest time between two ticks of one replica (at most `pollMs`). Default 50 ms. */
  coalesceMs?: number;
}

const DEFAULT_OUTAGE_AFTER_MS = 15_000;
const DEFAULT_COALESCE_MS = 50;

export interface TickResult {
  /** When the earliest enabled job is due next, as seen after this pass. */
  nextDueAt: Date | null;
  fired: number;
  recorded: number;
  started: number;
  finished: number;
}

export interface Scheduler {
  /**
   * One pass over the table, its wake-ups sent (tests with a set clock call it; the loop
   * passes on without waiting for Redis).
   */
  tick(): Promise<TickResult>;
  /** Starts the loop: a tick, then a sleep until the next due job (at most `pollMs`). */
  start(): void;
  /** Stops the loop after the tick in progress. */
  stop(): Promise<void>;
  /** Ready while the loop runs and its last tick went through. */
  readiness(): Readiness;
}

interface AfterCommit {
  deliveryIds: string[];
  lanes: Set<string>;
}

/**
 * A notify still unsent a catch-up window after its jittered instant (and at least a minute
 * after it was written) expires: never an alert hours late.
 */
const expiryOf = (job: CronJob, slot: Date, now: Date) =>
  new Date(Math.max(slot.getTime() + jitterFor(job.id, job.jitterMs)(slot) + job.catchupWindowMs, now.getTime() + 60_000));
const FINISH_BATCH = 500;
/** Commits whose wake-ups may be on their way at once before firing waits for Redis. */
const MAX_DISPATCHING = 64;

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
  const coalesceMs = Math.min(o.coalesceMs ?? DEFAULT_COALESCE_MS, o.pollMs);
  const log = o.logger;
  let lastFinish = 0;
  /** The heartbeat, after every committed transaction: a long tick is not taken for an outage. */
  const beat = () => o.cron.beat(o.clock.now());

  /** Wake-ups of committed transactions still being sent. */
  const dispatching = new Set<Promise<void>>();

  /**
   * Sends a commit's wake-ups without holding the next claim: firing is Postgres's alone and
   * goes on while Redis is slow or blocked (a long script, a failover), with at most
   * MAX_DISPATCHING commits' wake-ups in flight before it waits. One that fails, or that a
   * crash cuts off, leaves queued deliveries and lane items that the delivery and lane
   * sweepers pick up.
   */
  async function dispatch(after: AfterCommit): Promise<void> {
    if (after.deliveryIds.length === 0 && after.lanes.size === 0) return;
    const sent: Promise<void> = (async () => {
      if (after.deliveryIds.length) await o.outbox.dispatch(after.deliveryIds);
      for (const lane of after.lanes) await o.wakeLane(lane);
    })()
      .catch((error: unknown) => log.warn({ err: (error as Error).message }, "could not enqueue a fire's wake-ups; the sweepers will"))
      .finally(() => dispatching.delete(sent));
    dispatching.add(sent);
    while (dispatching.size >= MAX_DISPATCHING) await Promise.race(dispatching);
  }

  /** Until every wake-up sent so far has been sent (or failed). */
  const dispatched = async () => {
    while (dispatching.size > 0) await Promise.all(dispatching);
  };

  /** Claims one batch of due jobs and fires them; returns how many jobs it claimed. */
  async function fireDue(now: Date, result: TickResult): Promise<number> {
    const after: AfterCommit = { deliveryIds: [], lanes: new Set() };
    /** Counted once the transaction commits: a rolled-back fire did not happen. */
    const counted: { kind: string; outcome: "fired" | "failed" | "passed"; slot: Date }[] = [];
    const claimed = await o.transaction(async (tx) => {
      counted.length = 0;
      const rows = await o.cron.claimDue(now, batchSize, tx);
      if (rows.length === 0) return 0;
      const outages = await o.cron.outagesSince(new Date(now.getTime() - Math.max(...rows.map((j) => j.catchupWindowMs))), tx);
      const runs: NewCronRun[] = [];
      const advances: CronAdvance[] = [];
      const fires: { job: StoredCronJob; run: NewCronRun & { id: string }; ids: EffectIds; lane: string }[] = [];
      for (const row of rows) {
        const read = readCronJob(row);
        if (!read.ok) {
          // A row no schema reads cannot be fired; it is switched off where operators see why.
          log.error({ jobId: row.id, err: read.error }, "cron job disabled: unreadable");
          await o.cron.disable(row.id, read.error, tx);
          continue;
        }
        const job = read.value;
        const jitter = jitterFor(row.id, row.jitterMs);
        const plan = planFire({
          resolved: job.resolved,
          nextSlot: row.nextSlot ?? now,
          now,
          missed: job.missed,
          catchupWindowMs: row.catchupWindowMs,
          endAt: row.endAt,
          runsLeft: row.maxRuns === null ? null : Math.max(0, row.maxRuns - row.runCount),
          jitterMs: jitter,
          outages,
        });
        for (const passed of plan.passed) {
          counted.push({ kind: job.payload.kind, outcome: "passed", slot: passed.slot });
          runs.push({ jobId: row.id, slot: passed.slot, kind: job.payload.kind, status: passed.status, finishedAt: now, error: PASSED_REASON_TEXT[passed.reason] });
        }
        if (plan.unrecorded > 0) log.warn({ jobId: row.id, unrecorded: plan.unrecorded }, "cron job was far behind; passed slots beyond the record cap were counted, not written");
        for (const fire of plan.fires) {
          // Named before the insert, so the run row carries them from the start.
          const ids: EffectIds = { deliveryId: newRowId(), sessionId: randomUUID() };
          const run = {
            id: newRowId(),
            jobId: row.id,
            slot: fire.slot,
            kind: job.payload.kind,
            status: "running" as const,
            jobVersion: row.version,
            attempt: 1,
            deliveryIds: job.payload.kind === "notify" ? [ids.deliveryId] : [],
            sessionId: job.payload.kind === "agent_turn" && job.payload.session === "isolated" ? ids.sessionId : null,
          };
          runs.push(run);
          fires.push({ job, run, ids, lane: laneKeyOf(job, run.id) ?? "" });
        }
        advances.push({
          jobId: row.id,
          nextSlot: plan.next,
          nextRunAt: plan.next ? new Date(plan.next.getTime() + jitter(plan.next)) : null,
          fired: plan.fires.length,
          enabled: plan.next !== null,
        });
      }
      const inserted = await o.cron.insertRuns(runs, tx);
      // In lane order: two replicas appending to overlapping lanes lock them in one order.
      fires.sort((a, b) => (a.lane < b.lane ? -1 : a.lane > b.lane ? 1 : 0));
      for (const { job, run, ids } of fires) {
        // A slot that already has a row (a clock far behind moved a job back) is not fired again.
        if (!inserted.has(run.id)) continue;
        result.fired += 1;
        const ok = await startEffect(job, { id: run.id, slot: run.slot, attempt: 1, deliveryIds: [] }, ids, now, tx, after, run);
        counted.push({ kind: job.payload.kind, outcome: ok ? "fired" : "failed", slot: run.slot });
      }
      result.recorded += inserted.size - fires.filter((f) => inserted.has(f.run.id)).length;
      await o.cron.advance(advances, tx);
      return rows.length;
    });
    if (o.metrics && counted.length > 0) {
      const committedAt = o.clock.now().getTime();
      for (const { kind, outcome, slot } of counted) {
        o.metrics.fires.inc({ kind, outcome });
        if (outcome === "fired") o.metrics.fireLagSeconds.observe({ kind }, Math.max(0, committedAt - slot.getTime()) / 1000);
      }
    }
    await dispatch(after);
    if (claimed > 0) await beat();
    return claimed;
  }

  /**
   * Writes a fire's effect and brings its run row up to date (a new fire's row was inserted
   * with the ids the effect would use: `inserted`, and is left alone when they held). A fire
   * that cannot be written (a channel removed since) fails like a failed send.
   */
  async function startEffect(
    job: StoredCronJob,
    run: Pick<CronRun, "id" | "slot" | "attempt" | "deliveryIds">,
    ids: EffectIds,
    now: Date,
    tx: Tx,
    after: AfterCommit,
    inserted?: Pick<NewCronRun, "deliveryIds" | "sessionId">,
  ): Promise<boolean> {
    const written = await writeCronEffect(o, job, run, ids, expiryOf(job.row, run.slot, now), tx);
    if (!written.ok) {
      // The run row keeps only deliveries that exist (a new fire's row named one up front).
      await failed(job.row, { ...run, kind: job.payload.kind }, { error: written.error.message, retryable: true }, now, tx, after);
      return false;
    }
    const { deliveryId, dispatch, lanes, sessionId } = written.value;
    after.deliveryIds.push(...dispatch);
    for (const lane of lanes) after.lanes.add(lane);
    const deliveryIds = deliveryId ? [...run.deliveryIds, deliveryId] : run.deliveryIds;
    const current = inserted && (inserted.deliveryIds?.[0] ?? null) === deliveryId && (sessionId === null || inserted.sessionId === sessionId);
    if (!current) await o.cron.updateRun(run.id, { status: "running", attempt: run.attempt, deliveryIds, sessionId, retryAt: null }, tx);
    return true;
  }

  /**
   * A fire whose effect failed: a notify that nothing of reached the platform is tried again
   * after the next backoff step; otherwise (parts sent or of unknown outcome, expired, an
   * agent turn, the last step) it is recorded failed and counted on its job.
   */
  async function failed(
    job: CronJob,
    run: Pick<CronRun, "id" | "attempt" | "kind" | "deliveryIds">,
    outcome: { error: string; retryable: boolean },
    now: Date,
    tx: Tx,
    after: AfterCommit,
  ): Promise<void> {
    const { error } = outcome;
    // An agent turn is not fired again: its lane already retried the run with its own backoff.
    const delay = run.kind === "notify" && outcome.retryable ? backoff[run.attempt - 1] : undefined;
    if (delay !== undefined) {
      await o.cron.updateRun(run.id, { status: "retrying", attempt: run.attempt, deliveryIds: run.deliveryIds, retryAt: new Date(now.getTime() + delay), error }, tx);
      return;
    }
    await o.cron.updateRun(run.id, { status: "failed", attempt: run.attempt, deliveryIds: run.deliveryIds, error, finishedAt: now }, tx);
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
      const pending = (await o.cron.claimPendingRuns(now, batchSize, tx)).map(({ run, job: row }) => {
        const read = readCronJob(row);
        return { run, row, read, lane: read.ok ? (laneKeyOf(read.value, run.id) ?? "") : "" };
      });
      // In lane order, as fires append (see fireDue).
      pending.sort((a, b) => (a.lane < b.lane ? -1 : a.lane > b.lane ? 1 : 0));
      for (const { run, row, read } of pending) {
        // A retry of a fire from before the job was paused or edited is not sent (the edit
        // replaced what it would send, or when); a manual run is (it was asked for).
        const stale = run.status === "retrying" && ((!row.enabled && row.nextSlot !== null) || row.version !== run.jobVersion);
        if (!read.ok || stale) {
          const error = !read.ok ? read.error : !row.enabled ? "the job was disabled before its retry" : "the job was edited before its retry";
          await o.cron.updateRun(run.id, { status: "skipped", error, finishedAt: now }, tx);
          continue;
        }
        result.started += 1;
        const ids = { deliveryId: newRowId(), sessionId: randomUUID() };
        await startEffect(read.value, { id: run.id, slot: run.slot, attempt: run.attempt + 1, deliveryIds: run.deliveryIds }, ids, now, tx, after);
      }
    });
    await dispatch(after);
    await beat();
  }

  /** Runs whose delivery finished, or whose agent turn was answered or failed; returns how many were looked at. */
  async function finishEffects(now: Date, result: TickResult): Promise<number> {
    const done = await o.cron.finishedEffects(FINISH_BATCH);
    if (done.length === 0) return 0;
    const outcomes = new Map(done.map((d) => [d.runId, d.outcome]));
    const after: AfterCommit = { deliveryIds: [], lanes: new Set() };
    await o.transaction(async (tx) => {
      const succeeded: string[] = [];
      // The jobs are locked first, in id order, so replicas finishing runs of the same jobs
      // (and a job's delete) cannot deadlock.
      for (const { job, ...run } of await o.cron.lockRunning([...outcomes.keys()], tx)) {
        const outcome = outcomes.get(run.id)!;
        result.finished += 1;
        if (outcome.kind === "failed") {
          await failed(job, run, outcome, now, tx, after);
          continue;
        }
        succeeded.push(run.id);
        if (job.consecutiveFailures > 0) await o.cron.recordOutcome(job.id, false, tx);
        // A finished one-shot (an `at`, or a job at max_runs) with delete_after_run goes away.
        if (job.deleteAfterRun && !job.enabled && job.nextSlot === null) await o.cron.delete(job.id, tx);
      }
      await o.cron.succeedRuns(succeeded, now, tx);
    });
    await dispatch(after);
    await beat();
    return done.length;
  }

  /** One pass over the table; its wake-ups may still be on their way. */
  async function pass(): Promise<TickResult> {
    const now = o.clock.now();
    const look = await o.cron.look(now, outageAfterMs);
    const { outage } = look;
    if (outage) log.warn({ from: outage.from.toISOString(), to: outage.to.toISOString() }, "no scheduler ran in this span; its slots follow their jobs' missed policy");
    const result: TickResult = { nextDueAt: look.nextDueAt, fired: 0, recorded: 0, started: 0, finished: 0 };
    if (look.nextDueAt && look.nextDueAt.getTime() <= now.getTime()) {
      // Batch after batch while full; each committed one beats, so a long backlog is not taken
      // for an outage, while claims that keep failing are.
      while ((await fireDue(now, result)) === batchSize);
      result.nextDueAt = (await o.cron.glance(now)).nextDueAt;
    }
    if (look.pendingRuns) await startPending(now, result);
    if (now.getTime() - lastFinish >= finishEveryMs) {
      lastFinish = now.getTime();
      // Batch after batch while full, a few at most: a backlog shrinks without holding the tick.
      for (let i = 0; i < 5 && (await finishEffects(now, result)) === FINISH_BATCH; i++);
    }
    await beat();
    return result;
  }

  const stopping = new AbortController();
  let loop: Promise<void> | undefined;
  let lastTickFailed = false;
  async function run(): Promise<void> {
    while (!stopping.signal.aborted) {
      const started = Date.now();
      let waitMs = o.pollMs;
      try {
        const { nextDueAt } = await pass();
        lastTickFailed = false;
        if (nextDueAt) waitMs = Math.min(o.pollMs, Math.max(0, nextDueAt.getTime() - o.clock.now().getTime()));
      } catch (error) {
        // Postgres down or restarting: nothing was committed; look again after a poll.
        lastTickFailed = true;
        log[isOutage(error) ? "warn" : "error"]({ err: (error as Error).message }, "scheduler tick failed");
      }
      // Ticks at least `coalesceMs` apart: jobs due a few ms apart are claimed together, one
      // transaction for many, instead of a tick (and a race between replicas) per job.
      waitMs = Math.max(waitMs, coalesceMs - (Date.now() - started));
      await sleep(waitMs, undefined, { signal: stopping.signal }).catch(() => undefined);
    }
  }

  return {
    async tick() {
      const result = await pass();
      await dispatched();
      return result;
    },
    start() {
      loop ??= run();
    },
    async stop() {
      stopping.abort();
      await loop;
      await dispatched();
    },
    readiness() {
      if (!loop) return { ok: false, reason: "the scheduler loop has not started" };
      if (stopping.signal.aborted) return { ok: false, reason: "the scheduler is stopping" };
      // The reason stays generic: a probe's answer is no place for a database error's text (the log has it).
      if (lastTickFailed) return { ok: false, reason: "the last scheduler tick failed (see the log)" };
      return { ok: true };
    },
  };
}
