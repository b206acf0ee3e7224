import type { Job, Worker } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import { isConflictAbort, isOutage, type FencedPart, type Tx } from "@nahida/db";
import { recoveryTimings, type LaneMode, type Readiness, type RecoveryTimings } from "@nahida/contracts";
import type { Telemetry } from "bullmq";
import {
  SpanStatusCode,
  contextFromTraceparent,
  parseTraceparent,
  secondsSince,
  withSpan,
  type LaneMetrics,
  type LaneRunOutcome,
  type QueueMetrics,
  type WithSpanOptions,
} from "@nahida/observability";
import { consumerReadiness, createConsumer, type Periodic, type TypedQueue } from "@nahida/queue";
import { startLaneSweeper } from "./lane.sweeper";
import { LaneStore, LeaseLostError, type AppendResult, type LaneDatabase, type LaneItemRef, type LaneItemRow, type Lease } from "./lane.store";

export interface LaneRunContext {
  runId: string;
  laneKey: string;
  /** How the lane takes its items, as the claim read it (`/queue` changes it for the next run). */
  mode: LaneMode;
  /** The batch, in arrival order: one item in `followup` mode, all waiting ones in `collect`. */
  items: LaneItemRow[];
  /** Aborted when the lease is lost or the runtime shuts down; long work should stop. */
  signal: AbortSignal;
  /**
   * Commits the run's results in one transaction together with marking its items done,
   * fenced by the lease: if another worker took the lane over, nothing is written and
   * LeaseLostError is thrown. Call it at most once; a handler that returns without calling
   * it gets an empty commit.
   */
  commit<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * The same commit as one statement, for results that are all {@link FencedPart}s (the
   * common run: its turns and its reply): one round trip instead of a transaction's five or
   * more. Call it at most once, instead of `commit`.
   */
  commitParts(parts: readonly FencedPart[]): Promise<void>;
  /**
   * Marks one item of the batch as failed for good with `reason` (an item the handler cannot
   * handle: an unknown kind, a missing row). Recorded by the commit, with the rest done.
   */
  reject(itemId: string, reason: string): void;
}

/** The reason a run's signal carries when a user or operator stopped it (`/stop`). */
export class RunStoppedError extends Error {
  override name = "RunStoppedError";
  constructor(readonly laneKey: string) {
    super(`run on lane ${laneKey} was stopped`);
  }
}

/**
 * The reason a run's signal carries when a newer message superseded it (a lane in
 * `interrupt` mode): the run commits nothing and its items go back uncounted, so the next
 * run answers them together with the new one.
 */
export class RunSupersededError extends Error {
  override name = "RunSupersededError";
  constructor(readonly laneKey: string) {
    super(`run on lane ${laneKey} was superseded by a newer message`);
  }
}

/** The reason a run's signal carries when its process shuts down before the run finished. */
export class ShutdownError extends Error {
  override name = "ShutdownError";
  constructor() {
    super("worker is shutting down");
  }
}

export type LaneHandler = (run: LaneRunContext) => Promise<void>;

export interface LaneLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface LaneRuntimeOptions {
  db: LaneDatabase;
  /** Producer for the `lanes` queue (wake-ups). */
  wakeQueue: TypedQueue<"lanes">;
  /** Blocking Redis connection for the consumer. */
  consumerConnection: Redis | Cluster;
  prefix: string;
  /** Identifies this process in leases and run records (host:pid:random). */
  workerId: string;
  handler: LaneHandler;
  logger: LaneLogger;
  /** Lanes run at the same time in this process. */
  concurrency?: number;
  /**
   * Lease, sweep and job-lock times (`laneLeaseMs`, `laneSweepMs`, `jobLockMs`,
   * `stalledCheckMs`): a dead worker's lane is taken over after at most its lease plus one
   * sweep. Default: `recoveryTimings()`.
   */
  timings?: RecoveryTimings;
  /** Upper bound on a `collect` batch. Default 50. */
  maxBatchSize?: number;
  /** Runs an item may take before it fails for good. Default 3. */
  maxAttempts?: number;
  /** Backoff after a failed run, doubled per attempt. Default 1 s. */
  retryBackoffMs?: number;
  /** Runs per claim before the lane yields to others (fairness). Default 20. */
  maxRunsPerClaim?: number;
  /**
   * On close, how long running runs may finish before they are aborted and handed back
   * (their items return to pending without counting the attempt). Default 10 s.
   */
  shutdownGraceMs?: number;
  /** Run counts and durations. */
  metrics?: LaneMetrics;
  /** Wait and handler times of the `lanes` queue. */
  queueMetrics?: QueueMetrics;
  /** Trace propagation through wake jobs (`createQueueTelemetry`); none when tracing is off. */
  telemetry?: Telemetry;
}

/**
 * Wakes a lane. One waiting wake per lane is enough: a wake added while another is active
 * is kept as the single follow-up (BullMQ `keepLastIfActive`), the rest are dropped.
 */
export async function wakeLane(wakeQueue: TypedQueue<"lanes">, laneKey: string): Promise<void> {
  await wakeQueue.add("lane.wake", { laneKey }, { deduplication: { id: laneKey, keepLastIfActive: true } });
}

/** Pub/sub channel on which an interrupt (`/stop`) reaches whichever worker runs the lane. */
export const laneInterruptChannel = (prefix: string) => `${prefix}:lanes:abort`;

/** Aborts the run in progress in a lane, wherever it runs (its worker subscribes to {@link laneInterruptChannel}). */
export async function interruptLane(redis: Redis | Cluster, prefix: string, laneKey: string): Promise<void> {
  await redis.publish(laneInterruptChannel(prefix), laneKey);
}

/** Pub/sub channel on which a newer message supersedes a lane's run (`interrupt` mode); the message is `<seq> <lane key>`. */
export const laneSupersedeChannel = (prefix: string) => `${prefix}:lanes:supersede`;

/**
 * Supersedes the run in progress in a lane by the item at `seq`, wherever it runs: a run
 * that already took that item is left alone.
 */
export async function supersedeLane(redis: Redis | Cluster, prefix: string, laneKey: string, seq: bigint): Promise<void> {
  await redis.publish(laneSupersedeChannel(prefix), `${seq} ${laneKey}`);
}

/** Reads a {@link laneSupersedeChannel} message; null when it is not one. */
export function readSupersede(message: string): { laneKey: string; seq: bigint } | null {
  const space = message.indexOf(" ");
  const seq = message.slice(0, space);
  return space > 0 && /^\d{1,19}$/.test(seq) ? { laneKey: message.slice(space + 1), seq: BigInt(seq) } : null;
}

/** Producer side: append work to a lane and wake it. Used by the agent and by tests. */
export class LaneProducer {
  private readonly store: LaneStore;

  constructor(
    db: LaneDatabase,
    private readonly wakeQueue: TypedQueue<"lanes">,
  ) {
    this.store = new LaneStore(db);
  }

  /**
   * Appends and wakes. Pass `tx` to append inside the caller's transaction; then call
   * `wake` after that transaction commits (a wake before commit could find nothing).
   */
  async append(laneKey: string, item: LaneItemRef, tx?: Tx): Promise<AppendResult> {
    const result = await this.store.append(laneKey, item, tx);
    if (!tx) await this.wake(laneKey);
    return result;
  }

  async wake(laneKey: string): Promise<void> {
    await wakeLane(this.wakeQueue, laneKey);
  }
}

export type RunOutcome =
  /**
   * `lastSeq`: the newest item the run took (absent when nothing ran); `released`: whether
   * its one-statement commit gave the lane back (false: items were appended since the run
   * began, so a release cannot succeed either); absent after a transaction's commit.
   */
  | { kind: "ran"; lastSeq?: bigint; released?: boolean }
  | { kind: "empty" }
  | { kind: "lease-lost" }
  | { kind: "handed-back" }
  /** `outage`: Postgres or Redis was away; the attempt did not count. */
  | { kind: "failed"; retryInMs: number; outage?: boolean };

/** The `outcome` label of `nahida_lane_runs_total` for a run that started. */
export function runOutcomeLabel(outcome: Exclude<RunOutcome, { kind: "empty" }>): LaneRunOutcome {
  switch (outcome.kind) {
    case "ran":
      return "completed";
    case "failed":
      return outcome.outage ? "outage" : "failed";
    case "handed-back":
      return "handed_back";
    case "lease-lost":
      return "lease_lost";
    default: {
      const unreachable: never = outcome;
      throw new Error(`unknown run outcome ${JSON.stringify(unreachable)}`);
    }
  }
}

/** How long a supersede that found no run waits for one to register (the gap between reading a batch and starting it). */
const SUPERSEDE_KEEP_MS = 2_000;

export type DrainOutcome = "drained" | "busy" | "yielded" | "failed" | "lease-lost";

/**
 * A run continues the trace of its oldest item (the message that has waited longest; a
 * wake job is de-duplicated per lane and cannot say whose trace it is), and links the
 * traces of the other items it took. Items stored without a trace leave the run in the
 * wake job's trace.
 */
function runSpanOptions(laneKey: string, runId: string, items: LaneItemRow[]): WithSpanOptions {
  const [first, ...rest] = items.filter((i) => parseTraceparent(i.traceparent));
  const links = rest.flatMap((i) => {
    const spanContext = parseTraceparent(i.traceparent);
    return spanContext ? [{ context: spanContext }] : [];
  });
  return {
    attributes: { "nahida.lane.key": laneKey, "nahida.lane.run_id": runId, "nahida.lane.items": items.length },
    ...(first ? { parent: contextFromTraceparent(first.traceparent) } : {}),
    ...(links.length > 0 ? { links } : {}),
  };
}

/**
 * Consumer side of session lanes (docs/lanes.md): a BullMQ worker on the `lanes` queue
 * whose jobs only say "look at lane K"; the lane's order, lease and run records live in
 * Postgres. Plus a sweeper that re-wakes lanes whose wake was lost or whose worker died.
 */
export class LaneRuntime {
  private readonly store: LaneStore;
  private readonly producer: LaneProducer;
  private worker: Worker | undefined;
  private sweep: Periodic | undefined;
  private stopping = false;
  /**
   * Stop switches of the runs in progress in this process, by lane, with the newest item
   * each run took and whether its batch was full (a newer item could not have been in it).
   */
  private readonly active = new Map<string, { stop: AbortController; lastSeq: bigint; full: boolean }>();
  /**
   * Supersedes that found no run here, kept a moment: one that arrives while a run has read
   * its items but not yet registered applies when it registers.
   */
  private readonly supersedes = new Map<string, { seq: bigint; at: number }>();
  private readonly o: Required<Omit<LaneRuntimeOptions, "db" | "wakeQueue" | "consumerConnection" | "handler" | "logger" | "prefix" | "workerId" | "metrics" | "queueMetrics" | "telemetry">>;

  constructor(private readonly options: LaneRuntimeOptions) {
    this.store = new LaneStore(options.db);
    this.producer = new LaneProducer(options.db, options.wakeQueue);
    this.o = {
      concurrency: options.concurrency ?? 16,
      timings: options.timings ?? recoveryTimings(),
      maxBatchSize: options.maxBatchSize ?? 50,
      maxAttempts: options.maxAttempts ?? 3,
      retryBackoffMs: options.retryBackoffMs ?? 1_000,
      maxRunsPerClaim: options.maxRunsPerClaim ?? 20,
      shutdownGraceMs: options.shutdownGraceMs ?? 10_000,
    };
  }

  start(): void {
    this.worker = createConsumer(
      "lanes",
      { "lane.wake": async ({ laneKey }) => this.drain(laneKey) },
      {
        connection: this.options.consumerConnection,
        prefix: this.options.prefix,
        concurrency: this.o.concurrency,
        lockDurationMs: this.o.timings.jobLockMs,
        stalledIntervalMs: this.o.timings.stalledCheckMs,
        onFailed: (job: Job | undefined, error: Error) =>
          this.options.logger.warn({ laneKey: job?.data?.laneKey, err: error.message }, "lane wake failed"),
        onError: (error) => this.options.logger.error({ err: error.message }, "lane worker error"),
        ...(this.options.queueMetrics ? { metrics: this.options.queueMetrics } : {}),
        ...(this.options.telemetry ? { telemetry: this.options.telemetry } : {}),
      },
    );
    this.sweep = startLaneSweeper({
      store: this.store,
      wakeQueue: this.options.wakeQueue,
      intervalMs: this.o.timings.laneSweepMs,
      // An item younger than one sweep may still have its wake on the way.
      graceMs: this.o.timings.laneSweepMs,
      logger: this.options.logger,
    });
  }

  /** Ready while its consumer of the `lanes` queue takes wake-ups. */
  readiness(): Readiness {
    return consumerReadiness(this.worker, "lanes");
  }

  /**
   * Graceful stop: no new run starts; running runs get `shutdownGraceMs` to finish, then
   * are aborted and handed back; lanes with work left are woken for other workers.
   */
  async close(): Promise<void> {
    this.stopping = true;
    this.sweep?.stop();
    const grace = setTimeout(() => {
      for (const { stop } of this.active.values()) stop.abort(new ShutdownError());
    }, this.o.shutdownGraceMs);
    try {
      await this.worker?.close();
    } finally {
      clearTimeout(grace);
    }
  }

  /**
   * Aborts the run in progress on a lane in this process (its signal's reason is a
   * RunStoppedError). Returns false when this process is not running that lane.
   */
  abortRun(laneKey: string): boolean {
    const active = this.active.get(laneKey);
    if (!active) return false;
    active.stop.abort(new RunStoppedError(laneKey));
    return true;
  }

  /**
   * Aborts the run in progress on a lane in this process if it does not have the item at
   * `seq` (a newer message in `interrupt` mode): it commits nothing and its items go back
   * uncounted. Returns false when no such run is here.
   */
  supersedeRun(laneKey: string, seq: bigint): boolean {
    const now = Date.now();
    for (const [key, early] of this.supersedes) if (now - early.at > SUPERSEDE_KEEP_MS) this.supersedes.delete(key);
    const active = this.active.get(laneKey);
    if (!active) {
      this.supersedes.set(laneKey, { seq, at: now });
      return false;
    }
    // A full batch could not have taken the new item: aborting it would only start over, forever under a flood.
    if (active.lastSeq >= seq || active.full) return false;
    active.stop.abort(new RunSupersededError(laneKey));
    return true;
  }

  /** Takes the lane if free and runs its open items batch by batch until none are left. */
  async drain(laneKey: string): Promise<DrainOutcome> {
    // The first run's claim, read and start are one statement.
    const claimed = await this.store.claimAndStart(laneKey, this.options.workerId, this.o.timings.laneLeaseMs, {
      workerId: this.options.workerId,
      maxBatchSize: this.o.maxBatchSize,
      maxAttempts: this.o.maxAttempts,
    });
    // Busy: the holder re-checks for open items after it releases (below), and a dead
    // holder's lane is found by the sweeper once its lease expires.
    if (!claimed) return "busy";
    const { lease } = claimed;
    if (claimed.abandoned.length > 0) this.logAbandoned(laneKey, claimed.abandoned);
    let prepared = claimed.run ?? undefined;

    const leaseLost = new AbortController();
    const heartbeat = setInterval(() => {
      this.store
        .renew(lease, this.o.timings.laneLeaseMs)
        .then((held) => {
          if (!held) leaseLost.abort(new LeaseLostError(laneKey));
        })
        .catch((error) => this.options.logger.warn({ laneKey, err: (error as Error).message }, "lease renewal failed"));
    }, this.o.timings.renewEveryMs);

    let outcome: DrainOutcome = "drained";
    let retryInMs = 0;
    let released = false;
    try {
      for (let runs = 0; ; runs++) {
        if (runs >= this.o.maxRunsPerClaim || this.stopping) {
          // A run the claim started but that will not run now goes back uncounted.
          if (prepared) await this.store.handBack(lease, prepared.runId);
          outcome = "yielded";
          break;
        }
        const result = await this.runOnce(lease, leaseLost.signal, prepared);
        prepared = undefined;
        if (result.kind === "empty") break;
        if (result.kind === "handed-back") {
          outcome = "yielded";
          break;
        }
        if (result.kind === "failed") {
          outcome = "failed";
          retryInMs = result.retryInMs;
          break;
        }
        if (result.kind === "lease-lost") {
          outcome = "lease-lost";
          break;
        }
        // Caught up: nothing was appended since the run began, so give the lane back now
        // (one statement instead of reading the empty lane, releasing and looking again;
        // a one-statement commit did it already).
        if (result.released ?? (result.lastSeq !== undefined && (await this.store.releaseIfCaughtUp(lease, result.lastSeq)))) {
          released = true;
          break;
        }
      }
    } finally {
      clearInterval(heartbeat);
      if (outcome !== "lease-lost" && !released) await this.store.release(lease);
    }
    // Release, then look again: an item committed after our last read but before the
    // release found the lease held and its wake returned "busy"; this check sees it.
    if (outcome === "failed") {
      await this.options.wakeQueue.add("lane.wake", { laneKey }, { delay: retryInMs });
    } else if (!released && outcome !== "lease-lost" && (await this.store.hasOpenItems(laneKey))) {
      await this.producer.wake(laneKey);
    }
    return outcome;
  }

  private logAbandoned(laneKey: string, itemIds: string[]): void {
    this.options.logger.error({ laneKey, items: itemIds }, "lane items abandoned");
  }

  /** Reads and starts the next run (unless `prepared` by the claim), runs it and commits. */
  private async runOnce(lease: Lease, signal: AbortSignal, prepared?: { runId: string; items: LaneItemRow[] }): Promise<RunOutcome> {
    let runId: string;
    let items: LaneItemRow[];
    if (prepared) {
      ({ runId, items } = prepared);
    } else {
      const limit = lease.mode === "followup" ? 1 : this.o.maxBatchSize;
      const open = await this.store.openItems(lease.laneKey, limit);
      if (open.length === 0) return { kind: "empty" };

      // Items whose earlier runs all died (crashing the worker each time) are given up on.
      const exhausted = open.filter((i) => i.attempts >= this.o.maxAttempts);
      if (exhausted.length > 0) {
        await this.store.abandon(lease, exhausted.map((i) => i.id), `gave up after ${this.o.maxAttempts} attempts`);
        this.logAbandoned(lease.laneKey, exhausted.map((i) => i.id));
        return { kind: "ran" };
      }
      try {
        runId = await this.store.startRun(lease, this.options.workerId, open);
      } catch (error) {
        if (error instanceof LeaseLostError) return { kind: "lease-lost" };
        throw error;
      }
      items = open.map((i) => ({ ...i, status: "running" as const, runId, attempts: i.attempts + 1 }));
    }
    const started = performance.now();
    const outcome = await withSpan("lane.run", runSpanOptions(lease.laneKey, runId, items), async (span) => {
      const result = await this.run(lease, signal, runId, items);
      span.setAttribute("nahida.lane.run_outcome", runOutcomeLabel(result));
      if (result.kind === "failed") span.setStatus({ code: SpanStatusCode.ERROR, message: "the run failed" });
      return result;
    });
    const metrics = this.options.metrics;
    if (metrics) {
      const label = runOutcomeLabel(outcome);
      metrics.runs.inc({ outcome: label });
      metrics.runDurationSeconds.observe({ outcome: label }, secondsSince(started));
    }
    return outcome;
  }

  /** Runs one started run and commits it, or fails, hands back or discards it. */
  private async run(lease: Lease, signal: AbortSignal, runId: string, items: LaneItemRow[]): Promise<Exclude<RunOutcome, { kind: "empty" }>> {
    // Open items come oldest first, so every open item up to this one is in the run.
    const lastSeq = items.reduce((max, i) => (i.seq > max ? i.seq : max), 0n);
    const stop = new AbortController();
    const active = { stop, lastSeq, full: lease.mode === "interrupt" && items.length >= this.o.maxBatchSize };
    this.active.set(lease.laneKey, active);
    const early = this.supersedes.get(lease.laneKey);
    if (early) {
      this.supersedes.delete(lease.laneKey);
      if (early.seq > lastSeq && !active.full && Date.now() - early.at <= SUPERSEDE_KEEP_MS) stop.abort(new RunSupersededError(lease.laneKey));
    }
    const runSignal = AbortSignal.any([signal, stop.signal]);
    let committed = false;
    /** Set by a one-statement commit: whether it gave the lane back (false: items came since). */
    let released: boolean | undefined;
    const rejected = new Map<string, string>();
    const context: LaneRunContext = {
      runId,
      laneKey: lease.laneKey,
      mode: lease.mode,
      items,
      signal: runSignal,
      commit: async (fn) => {
        if (committed) throw new Error(`run ${runId} committed twice`);
        const value = await this.store.fenced(lease, async (tx) => {
          const v = await fn(tx);
          await this.store.completeRun(tx, lease, runId, rejected);
          return v;
        });
        committed = true;
        return value;
      },
      commitParts: async (parts) => {
        if (committed) throw new Error(`run ${runId} committed twice`);
        // The lane is given back in the same statement when the run caught up: from here on
        // the handler may only do what needs no lease (enqueue what it committed).
        ({ released } = await this.store.commitStatement(lease, runId, rejected, parts, lastSeq));
        committed = true;
      },
      reject: (itemId, reason) => {
        if (committed) throw new Error(`run ${runId} already committed`);
        if (!items.some((i) => i.id === itemId)) throw new Error(`item ${itemId} is not in run ${runId}`);
        rejected.set(itemId, reason);
        this.options.logger.error({ laneKey: lease.laneKey, runId, itemId, reason }, "lane item rejected");
      },
    };
    try {
      await this.options.handler(context);
      if (!committed) await context.commitParts([]);
      return { kind: "ran", lastSeq, released };
    } catch (error) {
      if (committed) {
        // The results are in; what failed came after (enqueueing is swept up elsewhere).
        this.options.logger.warn({ laneKey: lease.laneKey, runId, err: (error as Error).message }, "run failed after its commit");
        return { kind: "ran", lastSeq, released };
      }
      if (error instanceof LeaseLostError || signal.reason instanceof LeaseLostError) {
        this.options.logger.warn({ laneKey: lease.laneKey, runId }, "lease lost; run discarded");
        return { kind: "lease-lost" };
      }
      if (runSignal.reason instanceof ShutdownError || runSignal.reason instanceof RunSupersededError) {
        // Neither is the items' fault: they go back uncounted, and the lane is woken for the next run.
        const why = runSignal.reason instanceof RunSupersededError ? "superseded by a newer message" : "handed back at shutdown";
        await this.store.handBack(lease, runId, why);
        this.options.logger.info({ laneKey: lease.laneKey, runId }, `run ${why}`);
        return { kind: "handed-back" };
      }
      const message = error instanceof Error ? error.message : String(error);
      if (isOutage(error) || isConflictAbort(error)) {
        // Postgres or Redis is away, or Postgres broke a deadlock (two commits enqueueing
        // into each other's lanes): not the items' fault, so the attempt does not count
        // (a few in a row must not give up on a message). Try again after a pause.
        this.options.logger.warn({ laneKey: lease.laneKey, runId, err: message }, "lane run hit an outage; handing it back");
        // The hand-back needs the database too; if it is still away the lease runs out and
        // the lane is taken over later (the attempt then stays counted).
        await this.store.handBack(lease, runId).catch((e: unknown) =>
          this.options.logger.warn({ laneKey: lease.laneKey, runId, err: (e as Error).message }, "could not hand the run back yet"),
        );
        return { kind: "failed", retryInMs: this.o.retryBackoffMs, outage: true };
      }
      this.options.logger.warn({ laneKey: lease.laneKey, runId, err: message }, "lane run failed");
      const attempt = Math.max(...items.map((i) => i.attempts));
      const retryInMs = this.o.retryBackoffMs * 2 ** (attempt - 1);
      await this.store.failRun(lease, runId, message, this.o.maxAttempts, retryInMs);
      return { kind: "failed", retryInMs };
    } finally {
      // Only its own entry: once a commit released the lane, a run of the same lane may
      // have started in this process and registered its stop switch.
      if (this.active.get(lease.laneKey) === active) this.active.delete(lease.laneKey);
    }
  }
}
