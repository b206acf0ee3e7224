import { createHash } from "node:crypto";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import type { Redis } from "ioredis";
import { startTelegramIngress, type RunningTelegramIngress } from "@nahida/channel-telegram";
import { InboundMessageRepository, InboundQuarantineRepository } from "@nahida/db";
import { createLaneIntake } from "@nahida/ingress";
import { TypedQueue, createRedis } from "@nahida/queue";
import { startFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.fake";
import { TEST_REDIS_URL, clearQueuePrefix, createTestDatabase, testQueuePrefix, waitFor, type TestDatabase } from "../support/infra";
import { TEST_BOT_TOKEN } from "../support/nahida-harness";
import { privateText } from "./telegram-fixtures";

describe("one Telegram poller per bot token across replicas", () => {
  let t: TestDatabase;
  let telegram: FakeTelegram;
  let redis: Redis;
  let prefix: string;
  let lanesQueue: TypedQueue<"lanes">;
  const logs: string[] = [];
  const logger = pino({ level: "warn" }, new Writable({ write: (chunk, _enc, done) => (logs.push(String(chunk)), done()) }));
  const replicas: RunningTelegramIngress[] = [];

  const start = () =>
    startTelegramIngress({
      token: TEST_BOT_TOKEN,
      apiRoot: telegram.apiRoot,
      mode: "polling",
      intake: createLaneIntake({ inbound: new InboundMessageRepository(t.db), quarantine: new InboundQuarantineRepository(t.db.prisma), lanes: lanesQueue, redis, prefix }),
      redis,
      prefix,
      logger,
      pollTimeoutSeconds: 1,
      leaderTtlMs: 1_500,
    });
  const stored = async () => (await t.db.pool.query("SELECT count(*)::int AS n FROM inbound_messages")).rows[0].n as number;

  beforeAll(async () => {
    t = await createTestDatabase("poller");
    telegram = await startFakeTelegram();
    redis = createRedis({ url: TEST_REDIS_URL });
    prefix = testQueuePrefix("poller");
    lanesQueue = new TypedQueue("lanes", { connection: redis, prefix });
  });
  afterAll(async () => {
    for (const r of replicas) await r.stop();
    await lanesQueue?.close();
    redis?.disconnect();
    await telegram?.close();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await t?.drop();
  });

  it("takes over from a leader that died without releasing, within the lease", async () => {
    // A crashed replica's lock: nobody renews it.
    const tokenId = createHash("sha256").update(TEST_BOT_TOKEN).digest("hex").slice(0, 16);
    await redis.set(`${prefix}:telegram:poller:${tokenId}`, "dead-replica", "PX", 1_500);
    const t0 = Date.now();
    replicas.push(await start());
    telegram.pushUpdate(privateText(600000001, "anyone?"));
    await waitFor(async () => (await stored()) === 1, 10_000, "the update to be stored");
    const tookMs = Date.now() - t0;
    expect(tookMs).toBeGreaterThanOrEqual(1_000);
    expect(tookMs).toBeLessThan(5_000);
  });

  it("lets exactly one of two replicas poll, never triggering Telegram's 409, and hands over when it stops", async () => {
    replicas.push(await start());
    const [a, b] = replicas as [RunningTelegramIngress, RunningTelegramIngress];
    await new Promise((r) => setTimeout(r, 2_500));
    expect([a.poller!.isLeader, b.poller!.isLeader].filter(Boolean)).toHaveLength(1);

    const leader = a.poller!.isLeader ? a : b;
    const follower = leader === a ? b : a;
    const lockKey = `${prefix}:telegram:poller:${createHash("sha256").update(TEST_BOT_TOKEN).digest("hex").slice(0, 16)}`;
    const holder = await redis.get(lockKey);
    await leader.stop();
    // A graceful stop gives the lock up at once instead of letting it expire.
    expect(holder).not.toBeNull();
    expect(await redis.get(lockKey)).not.toBe(holder);
    replicas.splice(replicas.indexOf(leader), 1);
    telegram.pushUpdate(privateText(600000002, "still there?"));
    await waitFor(async () => (await stored()) === 2, 10_000, "the follower to take over");
    expect(follower.poller!.isLeader).toBe(true);
    expect(logs.filter((l) => l.includes("getUpdates conflict"))).toEqual([]);
  });

  it("stores an update carrying NUL characters (which Postgres cannot hold) and keeps polling", async () => {
    const before = await stored();
    telegram.pushUpdate(privateText(600000003, "bad\u0000byte"));
    telegram.pushUpdate(privateText(600000004, "next one"));
    await waitFor(async () => (await stored()) === before + 2, 10_000, "both updates to be stored");
    const row = await t.db.pool.query("SELECT message->'message'->>'text' AS text FROM inbound_messages WHERE chat_address = 'telegram:private:600000003'");
    expect(row.rows[0].text).toBe("badbyte");
  });
});
