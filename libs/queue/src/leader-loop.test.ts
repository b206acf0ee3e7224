import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { TEST_REDIS_URL, clearQueuePrefix, testQueuePrefix, waitFor } from "../../../test/support/infra";
import { LeaderLoop } from "./leader-loop";
import { createRedis } from "./redis";
import { RedisLeadership } from "./redis-leadership";

const silent = { info: () => undefined, warn: () => undefined };

describe("LeaderLoop", () => {
  let redis: Redis;
  let prefix: string;
  beforeAll(() => {
    redis = createRedis({ url: TEST_REDIS_URL });
    prefix = testQueuePrefix("leader_loop");
  });
  afterAll(async () => {
    redis?.disconnect();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
  });

  /** A loop whose work runs until its signal aborts, counting the terms it was given. */
  function replica(key: string, id: string, ttlMs = 1_500) {
    const state = { terms: 0, active: 0, maxActive: 0 };
    const loop = new LeaderLoop({
      leadership: new RedisLeadership(redis, `${prefix}:${key}`, id, ttlMs),
      role: `the ${key} holder`,
      logger: silent,
      lead: async (signal) => {
        state.terms++;
        state.active++;
        await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
        state.active--;
      },
    });
    return { loop, state };
  }

  it("runs the work on one replica only and hands it over at once when the holder stops", async () => {
    const a = replica("handover", "a");
    const b = replica("handover", "b");
    a.loop.start();
    await waitFor(async () => a.loop.isLeader, 2_000, "a to lead");
    b.loop.start();
    await new Promise((r) => setTimeout(r, 1_200));
    expect(b.loop.isLeader).toBe(false);
    expect(b.state.terms).toBe(0);

    const stoppedAt = Date.now();
    await a.loop.stop();
    expect(a.state.active).toBe(0);
    await waitFor(async () => b.loop.isLeader, 2_000, "b to take over");
    // b tries every third of the TTL; a released, so no TTL has to run out.
    expect(Date.now() - stoppedAt).toBeLessThan(1_000);
    await b.loop.stop();
    expect(b.state.terms).toBe(1);
  });

  it("aborts the holder's work when its lease is taken away, and another replica gets it within the TTL", async () => {
    const a = replica("stolen", "a");
    const b = replica("stolen", "b");
    a.loop.start();
    await waitFor(async () => a.loop.isLeader, 2_000, "a to lead");
    b.loop.start();
    // As if a's process froze past its TTL and b took the expired key meanwhile.
    await redis.set(`${prefix}:stolen`, "b", "PX", 1_500);
    await waitFor(async () => b.loop.isLeader, 3_000, "b to take over");
    await waitFor(async () => a.state.active === 0, 2_000, "a's work to be aborted");
    expect(a.loop.isLeader).toBe(false);
    expect(a.state.terms).toBe(1);
    await Promise.all([a.loop.stop(), b.loop.stop()]);
  });

  it("tries again after the work throws", async () => {
    let calls = 0;
    const loop = new LeaderLoop({
      leadership: new RedisLeadership(redis, `${prefix}:throws`, "x", 1_500),
      role: "the throwing holder",
      logger: silent,
      errorDelayMs: 50,
      lead: async (signal) => {
        calls++;
        if (calls < 3) throw new Error("connection refused");
        await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      },
    });
    loop.start();
    await waitFor(async () => calls >= 3 && loop.isLeader, 2_000, "a third term");
    await loop.stop();
    expect(await redis.get(`${prefix}:throws`)).toBeNull();
  });
});
