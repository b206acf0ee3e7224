import { every, type Periodic, type TypedQueue } from "@nahida/queue";
import type { LaneStore } from "./lane.store";

export interface LaneSweeperOptions {
  store: Pick<LaneStore, "strandedLanes">;
  wakeQueue: TypedQueue<"lanes">;
  intervalMs: number;
  /** Items older than this with no live lease count as stranded. */
  graceMs: number;
  logger: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
}

/**
 * Re-wakes lanes whose wake was lost (Redis lost it, a crash between commit and wake) or
 * whose worker died (the lease expired with items open). Runs in every worker process.
 */
export function startLaneSweeper(o: LaneSweeperOptions): Periodic {
  return every(
    o.intervalMs,
    async () => {
      const stranded = await o.store.strandedLanes(o.graceMs, 500);
      for (const laneKey of stranded) {
        // A separate dedup id: the lane's own id may still be held by a dead worker's job.
        await o.wakeQueue.add("lane.wake", { laneKey }, { deduplication: { id: `sweep:${laneKey}`, ttl: o.intervalMs } });
      }
      if (stranded.length > 0) o.logger.info({ lanes: stranded.length }, "re-woke stranded lanes");
    },
    (error) => o.logger.warn({ err: (error as Error).message }, "lane sweep failed"),
  );
}
