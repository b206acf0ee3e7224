import { QueueEvents } from "bullmq";

/** Adds per `queue/job name` (jobs created), and adds that created no job, per queue. */
export interface QueueAddCounts {
  added: Map<string, number>;
  /** `duplicated` (the job id existed) and `deduplicated` (a deduplication id was taken). */
  notCreated: Map<string, number>;
  /**
   * Jobs that went back rather than ending, per `queue how`: `delayed` (moved to delayed: a
   * backoff, or a worker putting a job off), `retried` (back to waiting from active),
   * `stalled` (its lock lapsed: back to waiting for another worker); and `failed`, jobs that
   * ended failing.
   */
  moved: Map<string, number>;
}

/**
 * Counts every job add on some queues from their event streams: every stored job (standard,
 * delayed, prioritized, whatever its id) emits `added`; an add refused because its job id
 * exists emits `duplicated`, one absorbed by a deduplication id `deduplicated`. The streams
 * are trimmed at about 10,000 events, so the listeners must keep up; {@link settle} waits
 * until they have read everything up to now.
 */
export async function startQueueAddCounter(options: { redisUrl: string; prefix: string; queues: readonly string[] }) {
  const added = new Map<string, number>();
  const notCreated = new Map<string, number>();
  const moved = new Map<string, number>();
  const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const listeners = options.queues.map((queue) => {
    const events = new QueueEvents(queue, { connection: { url: options.redisUrl }, prefix: options.prefix, blockingTimeout: 1000 });
    // A job added with a delay emits `delayed` right after `added`; only other `delayed` events are moves.
    const justAdded = new Set<string>();
    events.on("added", ({ name, jobId }) => {
      bump(added, `${queue}/${name}`);
      justAdded.add(jobId);
    });
    events.on("delayed", ({ jobId }) => {
      if (!justAdded.delete(jobId)) bump(moved, `${queue} delayed`);
    });
    events.on("active", ({ jobId }) => justAdded.delete(jobId));
    events.on("duplicated", () => bump(notCreated, `${queue} duplicated`));
    events.on("deduplicated", () => bump(notCreated, `${queue} deduplicated`));
    events.on("waiting", ({ jobId, prev }) => {
      justAdded.delete(jobId);
      if (prev === "active" || prev === "failed") bump(moved, `${queue} retried`);
    });
    events.on("failed", () => bump(moved, `${queue} failed`));
    // A stalled job is moved to waiting (prev `active`) before its `stalled`: a stall, not a retry.
    events.on("stalled", () => {
      bump(moved, `${queue} stalled`);
      moved.set(`${queue} retried`, (moved.get(`${queue} retried`) ?? 1) - 1);
    });
    events.on("error", () => undefined);
    return events;
  });
  await Promise.all(listeners.map((l) => l.waitUntilReady()));
  return {
    snapshot: (): QueueAddCounts => ({ added: new Map(added), notCreated: new Map(notCreated), moved: new Map(moved) }),
    /** Lets the blocking reads catch up with events written until now. */
    async settle(): Promise<void> {
      await new Promise((r) => setTimeout(r, 300));
    },
    async close(): Promise<void> {
      await Promise.all(listeners.map((l) => l.close()));
    },
  };
}

export function diffQueueCounts(before: QueueAddCounts, after: QueueAddCounts): QueueAddCounts {
  const diff = (a: Map<string, number>, b: Map<string, number>) => {
    const out = new Map<string, number>();
    for (const [k, n] of b) if (n - (a.get(k) ?? 0) > 0) out.set(k, n - (a.get(k) ?? 0));
    return out;
  };
  return { added: diff(before.added, after.added), notCreated: diff(before.notCreated, after.notCreated), moved: diff(before.moved, after.moved) };
}
