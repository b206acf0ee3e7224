import type { Redis } from "ioredis";
import type { LaneHandler } from "@nahida/lanes";

/** Table the test handler writes its results to, inside the fenced commit. */
export const LANE_TEST_LOG_DDL = `
CREATE TABLE IF NOT EXISTS lane_test_log (
  seq BIGSERIAL PRIMARY KEY,
  lane_key TEXT NOT NULL,
  ref_id TEXT NOT NULL,
  run_id UUID NOT NULL,
  worker_id TEXT NOT NULL,
  batch_size INT NOT NULL,
  attempt INT NOT NULL
)`;

export interface TestHandlerOptions {
  redis: Redis;
  /** Namespace for the overlap detector's keys. */
  prefix: string;
  workerId: string;
  /** Upper bound of the random work time per run. */
  maxWorkMs: number;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

/**
 * A lane handler that proves the lane guarantees from outside: it marks the lane active in
 * Redis (a second concurrent run of the same lane is recorded as an overlap) and logs every
 * item it handles in Postgres within the run's fenced commit.
 * Items whose ref contains `slow` hang on their first attempt (for the SIGKILL test).
 */
export function createTestHandler(options: TestHandlerOptions): LaneHandler {
  return async (run) => {
    const slow = run.items.some((i) => i.refId.includes("slow") && i.attempts === 1);
    const activeKey = `${options.prefix}:active:${run.laneKey}`;
    const tracked = !run.items.some((i) => i.refId.includes("slow"));
    if (tracked) {
      const claimed = await options.redis.set(activeKey, run.runId, "NX");
      if (claimed !== "OK") {
        const holder = await options.redis.get(activeKey);
        await options.redis.rpush(`${options.prefix}:overlaps`, `${run.laneKey} ${run.runId} vs ${holder}`);
      }
    }
    try {
      if (slow) await sleep(120_000, run.signal);
      else await sleep(Math.random() * options.maxWorkMs);
      await run.commit(async (tx) => {
        for (const item of run.items) {
          await tx.$executeRaw`
            INSERT INTO lane_test_log (lane_key, ref_id, run_id, worker_id, batch_size, attempt)
            VALUES (${run.laneKey}, ${item.refId}, ${run.runId}::uuid, ${options.workerId}, ${run.items.length}, ${item.attempts})`;
        }
      });
    } finally {
      if (tracked) {
        // Delete only our own marker; a stale one would otherwise hide or fake an overlap.
        await options.redis.eval(
          "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
          1,
          activeKey,
          run.runId,
        );
      }
    }
  };
}
