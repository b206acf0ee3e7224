import { DelayedError, Queue, UnrecoverableError, Worker, type Job, type JobsOptions, type Telemetry } from "bullmq";
import { BullMQOtel } from "bullmq-otel";
import type { Cluster, Redis } from "ioredis";
import { secondsSince, type QueueMetrics } from "@nahida/observability";
import { jobCatalog, type JobDefinition, type JobName, type JobPayload, type QueueName, type Readiness } from "@nahida/contracts";

export interface QueueOptions {
  /** Redis connection for producers (non-blocking commands). */
  connection: Redis | Cluster;
  /** Key prefix isolating deployments and test runs that share a Redis. */
  prefix: string;
  /** Trace propagation through the jobs ({@link createQueueTelemetry}); none when tracing is off. */
  telemetry?: Telemetry;
}

/**
 * BullMQ's OpenTelemetry bridge: a producer span per add whose context travels in the
 * job's options, and a consumer span per processing that continues it, so a trace crosses
 * the queue. Passed only when tracing is on: without it BullMQ adds no span and no metadata.
 */
export function createQueueTelemetry(): Telemetry {
  return new BullMQOtel({ tracerName: "nahida-bullmq" });
}

/** A payload that failed its schema; retrying cannot fix it. */
export class InvalidJobPayloadError extends UnrecoverableError {
  override name = "InvalidJobPayloadError";
  readonly code = "bad_request" as const;
}

/** Thrown by handlers for failures no retry can fix (a 400 from a platform, a missing row). */
export class PermanentJobError extends UnrecoverableError {
  override name = "PermanentJobError";
  constructor(
    message: string,
    readonly reason: string = message,
  ) {
    super(message);
  }
}

function definition<Q extends QueueName>(queue: Q, name: string) {
  const byName = jobCatalog[queue] as Record<string, JobDefinition>;
  const def = byName[name];
  if (!def) throw new Error(`job ${queue}/${name} is not in the job catalog`);
  return def;
}

/** Typed producer for one queue of the catalog: payloads are validated before they are added. */
export class TypedQueue<Q extends QueueName> {
  readonly queue: Queue;

  constructor(
    readonly name: Q,
    options: QueueOptions,
  ) {
    this.queue = new Queue(name, { connection: options.connection, prefix: options.prefix, ...(options.telemetry ? { telemetry: options.telemetry } : {}) });
  }

  async add<N extends JobName<Q>>(jobName: N, payload: JobPayload<Q, N>, options: JobsOptions = {}): Promise<Job> {
    const job = this.prepare(jobName, payload, options);
    return this.queue.add(job.name, job.data, job.opts);
  }

  /** Several jobs in one Redis round trip (BullMQ `addBulk`), each validated like {@link add}. */
  async addBulk<N extends JobName<Q>>(jobs: readonly { name: N; payload: JobPayload<Q, N>; options?: JobsOptions }[]): Promise<Job[]> {
    if (jobs.length === 0) return [];
    return this.queue.addBulk(jobs.map((j) => this.prepare(j.name, j.payload, j.options ?? {})));
  }

  private prepare<N extends JobName<Q>>(jobName: N, payload: JobPayload<Q, N>, options: JobsOptions) {
    const def = definition(this.name, jobName);
    const parsed = def.schema.safeParse(payload);
    if (!parsed.success) throw new InvalidJobPayloadError(`${this.name}/${jobName}: ${parsed.error.message}`);
    const opts: JobsOptions = {
      attempts: def.attempts,
      backoff: { type: "exponential", delay: def.backoffMs },
      removeOnComplete: { age: def.keepCompletedSeconds, count: def.keepCompletedCount },
      removeOnFail: { age: def.keepFailedSeconds },
      ...options,
    };
    return { name: jobName as string, data: parsed.data, opts };
  }

  /**
   * Makes sure a job with this id will run: adds it when missing, retries it when it failed
   * for good, replaces it when it completed or when its record survived a partial Redis loss
   * without being in any list (state `unknown`: nothing would ever run it); leaves a waiting,
   * delayed or active one alone. For sweepers whose rows say "not done" while the queue lost
   * or gave up on the job.
   */
  async addOrRevive<N extends JobName<Q>>(jobName: N, payload: JobPayload<Q, N>, jobId: string): Promise<"added" | "retried" | "pending"> {
    const existing = await this.queue.getJob(jobId);
    if (existing) {
      const state = await existing.getState();
      // A job that is not this one any more (its hash lost its name or data: keys evicted
      // under memory pressure, a partial loss) can only fail again: it is replaced.
      const damaged = existing.name !== jobName || !definition(this.name, jobName).schema.safeParse(existing.data).success;
      try {
        if (state === "failed" && !damaged) {
          await existing.retry("failed", { resetAttemptsMade: true });
          return "retried";
        }
        if (!damaged && state !== "completed" && state !== "unknown") return "pending";
        await existing.remove();
      } catch {
        // Another sweeper revived or replaced it first, or it is active (locked).
        return "pending";
      }
    }
    // Outside the try: a failed add (Redis away) is the caller's error, not "pending".
    await this.add(jobName, payload, { jobId });
    return "added";
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

export type JobHandlers<Q extends QueueName> = {
  /** `token` is the job's lock token, needed for `job.moveToDelayed`. */
  [N in JobName<Q>]: (payload: JobPayload<Q, N>, job: Job, token: string | undefined) => Promise<unknown>;
};

export interface ConsumerOptions {
  /** Blocking Redis connection (`maxRetriesPerRequest: null`). */
  connection: Redis | Cluster;
  prefix: string;
  concurrency: number;
  /** How long a job lock lives without renewal; a dead worker's job is retried after it (`RecoveryTimings.jobLockMs`). */
  lockDurationMs: number;
  /** How often stalled jobs are looked for (`RecoveryTimings.stalledCheckMs`). */
  stalledIntervalMs: number;
  onFailed?: (job: Job | undefined, error: Error) => void;
  onError?: (error: Error) => void;
  /** Wait and handler times of this queue's jobs. */
  metrics?: QueueMetrics;
  /** Continues each job's trace in its handler ({@link createQueueTelemetry}); none when tracing is off. */
  telemetry?: Telemetry;
}

/**
 * Typed consumer for one queue: every job is validated against its catalog schema before
 * the handler sees it; an invalid payload fails permanently instead of retrying.
 */
export function createConsumer<Q extends QueueName>(queue: Q, handlers: JobHandlers<Q>, options: ConsumerOptions): Worker {
  const worker = new Worker(
    queue,
    async (job: Job, token?: string) => {
      const handler = (handlers as Record<string, ((payload: unknown, job: Job, token: string | undefined) => Promise<unknown>) | undefined>)[job.name];
      if (!handler) throw new InvalidJobPayloadError(`no handler for ${queue}/${job.name}`);
      const parsed = definition(queue, job.name).schema.safeParse(job.data);
      if (!parsed.success) throw new InvalidJobPayloadError(`${queue}/${job.name}: ${parsed.error.message}`);
      const metrics = options.metrics;
      if (!metrics) return handler(parsed.data, job, token);
      // Only a job's first start waited in the queue; later ones waited out a backoff or a delay of its own.
      if (job.attemptsStarted <= 1 && job.processedOn) metrics.jobWaitSeconds.observe({ queue }, jobWaitSeconds(job.timestamp, job.delay, job.processedOn));
      const started = performance.now();
      let outcome = "failed";
      try {
        const result = await handler(parsed.data, job, token);
        outcome = "completed";
        return result;
      } catch (error) {
        if (error instanceof DelayedError) outcome = "delayed";
        throw error;
      } finally {
        metrics.jobDurationSeconds.observe({ queue, outcome }, secondsSince(started));
      }
    },
    {
      connection: options.connection,
      prefix: options.prefix,
      concurrency: options.concurrency,
      lockDuration: options.lockDurationMs,
      stalledInterval: options.stalledIntervalMs,
      maxStalledCount: 3,
      autorun: true,
      ...(options.telemetry ? { telemetry: options.telemetry } : {}),
    },
  );
  if (options.onFailed) worker.on("failed", options.onFailed);
  worker.on("error", options.onError ?? (() => undefined));
  return worker;
}

/** Seconds a job waited: from when it could first run (added, plus its delay) to its start; never negative. */
export function jobWaitSeconds(addedAtMs: number, delayMs: number, startedAtMs: number): number {
  return Math.max(0, startedAtMs - addedAtMs - delayMs) / 1000;
}

/** Jobs per queue and state for the `nahida_queue_jobs` gauge: one `getJobCounts` per queue. */
export async function queueJobCounts(queues: readonly TypedQueue<QueueName>[]): Promise<{ queue: string; state: string; count: number }[]> {
  const counts = await Promise.all(queues.map(async (q) => ({ queue: q.name, counts: await q.queue.getJobCounts("waiting", "active", "delayed", "failed", "prioritized", "waiting-children") })));
  return counts.flatMap(({ queue, counts }) => Object.entries(counts).map(([state, count]) => ({ queue, state, count })));
}

/** Worker connections of each queue (BullMQ names them by queue; every process's worker holds one). */
export async function queueWorkerCounts(queues: readonly TypedQueue<QueueName>[]): Promise<{ queue: string; count: number }[]> {
  return Promise.all(queues.map(async (q) => ({ queue: q.name, count: await q.queue.getWorkersCount() })));
}

/** A consumer is ready while it runs and is not closing: it takes jobs from its queue. */
export function consumerReadiness(worker: Worker | undefined, queue: QueueName): Readiness {
  if (!worker) return { ok: false, reason: `the ${queue} consumer has not started` };
  if (worker.closing) return { ok: false, reason: `the ${queue} consumer is closing` };
  if (!worker.isRunning()) return { ok: false, reason: `the ${queue} consumer is not running` };
  if (worker.isPaused()) return { ok: false, reason: `the ${queue} consumer is paused` };
  return { ok: true };
}

export type Queues = { [Q in QueueName]: TypedQueue<Q> };

/** A producer for every queue of the job catalog, sharing one connection. */
export function createQueues(connection: Redis | Cluster, prefix: string, telemetry?: Telemetry): Queues {
  const options: QueueOptions = { connection, prefix, ...(telemetry ? { telemetry } : {}) };
  return {
    lanes: new TypedQueue("lanes", options),
    outbound: new TypedQueue("outbound", options),
  };
}
