import { createServer, connect, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
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

  it("aborts the holder's work before its lease can expire when a renewal never answers (a blackholed Redis)", async () => {
    const ttlMs = 1_500;
    const proxy = await startBlackholeProxy(new URL(TEST_REDIS_URL));
    const cutOff = createRedis({ url: `redis://127.0.0.1:${proxy.port}` });
    let leaders = 0;
    let maxLeaders = 0;
    /** A holder over `client` whose terms are timed: when the last began and when it was aborted. */
    const timedReplica = (client: Redis, id: string) => {
      const times = { startedAt: 0, abortedAt: 0 };
      const loop = new LeaderLoop({
        leadership: new RedisLeadership(client, `${prefix}:blackholed`, id, ttlMs),
        role: `the blackholed key's holder ${id}`,
        logger: silent,
        lead: async (signal) => {
          times.startedAt = Date.now();
          maxLeaders = Math.max(maxLeaders, ++leaders);
          await untilAborted(signal);
          times.abortedAt = Date.now();
          leaders--;
        },
      });
      return { loop, times };
    };
    const { loop: holder, times: held } = timedReplica(cutOff, "a");
    const { loop: other, times: taken } = timedReplica(redis, "b");
    try {
      holder.start();
      await waitFor(async () => holder.isLeader, 2_000, "the holder to lead");
      // Let one renewal succeed, then every byte in either direction is held back: the
      // connection stays open, so ioredis neither fails nor reconnects, and renew() hangs.
      await new Promise((r) => setTimeout(r, ttlMs / 3 + 100));
      const cutAt = Date.now();
      proxy.blackhole(true);
      other.start();
      await waitFor(async () => held.abortedAt > 0, ttlMs * 2, "the holder's work to be aborted");
      // The last renewal that answered began at most a third of the TTL before the cut.
      expect(held.abortedAt - cutAt).toBeLessThan(ttlMs);
      expect(holder.isLeader).toBe(false);
      await waitFor(async () => taken.startedAt > 0, ttlMs * 3, "the other replica to take over");
      expect(taken.startedAt).toBeGreaterThanOrEqual(held.abortedAt);
      expect(maxLeaders).toBe(1);
    } finally {
      // Pending commands go through again, so the holder's loop can stop.
      proxy.blackhole(false);
      await Promise.all([holder.stop(), other.stop()]);
      cutOff.disconnect();
      await proxy.close();
    }
  });
});

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve(), { once: true })));
}

/** A TCP proxy in front of Redis that can hold back every byte while keeping the connections open. */
async function startBlackholeProxy(target: URL): Promise<{ port: number; blackhole(on: boolean): void; close(): Promise<void> }> {
  const pairs = new Set<[Socket, Socket]>();
  let holding = false;
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 6379), target.hostname);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    if (holding) for (const s of pair) s.pause();
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    blackhole(on) {
      holding = on;
      for (const pair of pairs) for (const s of pair) (on ? s.pause() : s.resume());
    },
    async close() {
      for (const pair of pairs) for (const s of pair) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
