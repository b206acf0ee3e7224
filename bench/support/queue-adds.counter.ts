import { QueueEvents } from "bullmq";

/** Adds per `queue/job name` (jobs created), and adds that created no job, per queue. */
export interface QueueAddCounts {
  added: Map<string, number>;
  /** `duplicated` (the job id existed) and `deduplicated` (a deduplication id was taken). */
  notCreated: Map<string, number>;
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
  const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const listeners = options.queues.map((queue) => {
    const events = new QueueEvents(queue, { connection: { url: options.redisUrl }, prefix: options.prefix, blockingTimeout: 1000 });
    events.on("added", ({ name }) => bump(added, `${queue}/${name}`));
    events.on("duplicated", () => bump(notCreated, `${queue} duplicated`));
    events.on("deduplicated", () => bump(notCreated, `${queue} deduplicated`));
    events.on("error", () => undefined);
    return events;
  });
  await Promise.all(listeners.map((l) => l.waitUntilReady()));
  return {
    snapshot: (): QueueAddCounts => ({ added: new Map(added), notCreated: new Map(notCreated) }),
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
  return { added: diff(before.added, after.added), notCreated: diff(before.notCreated, after.notCreated) };
}
