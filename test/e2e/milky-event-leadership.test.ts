import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import type { Redis } from "ioredis";
import { startMilkyIngress, type RunningMilkyIngress } from "@nahida/channel-milky";
import { InboundMessageRepository, InboundQuarantineRepository } from "@nahida/db";
import { createLaneIntake } from "@nahida/ingress";
import { TypedQueue, createRedis } from "@nahida/queue";
import { startFakeMilky, type FakeMilky } from "../fakes/milky.fake";
import { TEST_REDIS_URL, clearQueuePrefix, createTestDatabase, testQueuePrefix, waitFor, type TestDatabase } from "../support/infra";

const TOKEN = "milky-leadership-token";
/** The lease of the event connection in this test; README: a dead holder is replaced within TTL + TTL/3. */
const TTL_MS = 1_500;
const FIXTURES_DIR = fileURLToPath(new URL("../fixtures/milky/", import.meta.url));
const friendText = JSON.parse(readFileSync(`${FIXTURES_DIR}friend-text.json`, "utf8")) as Record<string, any>;

let nextSeq = 40_000;
function event(text: string) {
  return { ...friendText, data: { ...friendText.data, message_seq: ++nextSeq, segments: [{ type: "text", data: { text } }] } };
}

describe("one Milky event connection per account across replicas", () => {
  let t: TestDatabase;
  let milky: FakeMilky;
  let shared: Redis;
  let prefix: string;
  let lanes: TypedQueue<"lanes">;
  const connections: Redis[] = [];
  const replicas: RunningMilkyIngress[] = [];
  const logger = pino({ level: "silent" });

  /** A replica with a Redis connection of its own, so that it can lose Redis alone. */
  async function replica(): Promise<{ ingress: RunningMilkyIngress; redis: Redis }> {
    const redis = createRedis({ url: TEST_REDIS_URL });
    redis.on("error", () => undefined);
    connections.push(redis);
    const ingress = await startMilkyIngress({
      intake: createLaneIntake({ inbound: new InboundMessageRepository(t.db), quarantine: new InboundQuarantineRepository(t.db.prisma), lanes, redis: shared, prefix }),
      baseUrl: milky.baseUrl,
      accessToken: TOKEN,
      transport: "websocket",
      redis,
      prefix,
      logger,
      leaderTtlMs: TTL_MS,
    });
    replicas.push(ingress);
    return { ingress, redis };
  }
  const stored = async () => (await t.db.pool.query<{ text: string }>("SELECT message->'message'->>'text' AS text FROM inbound_messages")).rows.map((r) => r.text);

  beforeAll(async () => {
    t = await createTestDatabase("milky_leadership");
    milky = await startFakeMilky({ accessToken: TOKEN });
    shared = createRedis({ url: TEST_REDIS_URL });
    prefix = testQueuePrefix("milky_leadership");
    lanes = new TypedQueue("lanes", { connection: shared, prefix });
  }, 60_000);
  afterAll(async () => {
    for (const r of replicas) await r.stop().catch(() => undefined);
    await lanes?.close();
    for (const c of connections) c.disconnect();
    shared?.disconnect();
    await milky?.close();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await t?.drop();
  });

  it("holds one connection; when its holder dies the other connects within the bound, and no event is lost or doubled", async () => {
    const a = await replica();
    const b = await replica();
    await waitFor(async () => milky.eventClients().websocket === 1, 5_000, "one event connection");
    const holder = a.ingress.stream!.isLeader ? a : b;
    const other = holder === a ? b : a;
    expect(other.ingress.stream!.isLeader).toBe(false);
    // Both ready: the holder has its connection, the other knows it is a follower. (The fake
    // counts the socket when it accepts it, a moment before the holder's side is open.)
    await waitFor(async () => (await holder.ingress.readiness()).ok, 5_000, "the holder's connection to be open");
    expect(await holder.ingress.readiness()).toEqual({ ok: true });
    expect(await other.ingress.readiness()).toEqual({ ok: true });

    let mostConnections = 0;
    const watch = setInterval(() => (mostConnections = Math.max(mostConnections, milky.eventClients().websocket)), 20);
    const pushed: string[] = [];
    let pushedToNobody = 0;
    const push = async (text: string) => {
      pushed.push(text);
      if (milky.eventClients().websocket === 0) pushedToNobody++;
      await milky.pushEvent(event(text));
    };
    try {
      for (let i = 0; i < 5; i++) await push(`before ${i}`);
      await waitFor(async () => (await stored()).length === 5, 5_000, "the first events");

      // The holder's process dies: it can no longer renew, and its connection goes with it.
      const diedAt = Date.now();
      holder.redis.disconnect();
      // Events keep coming while nobody holds the connection, and after.
      const pushing = (async () => {
        for (let i = 0; i < 20; i++) {
          await push(`across ${i}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      await waitFor(async () => other.ingress.stream!.isLeader && milky.eventClients().websocket === 1, TTL_MS * 3, "the other replica to connect");
      await waitFor(async () => ((await other.ingress.readiness()).ok ? true : undefined), 5_000, "the new holder to be ready");
      expect(Date.now() - diedAt).toBeLessThan(TTL_MS + TTL_MS / 3 + 1_000);
      await pushing;
      for (let i = 0; i < 3; i++) await push(`after ${i}`);

      await waitFor(async () => (await stored()).length >= pushed.length, 10_000, "every event to be stored");
      await new Promise((r) => setTimeout(r, 500));
      const texts = await stored();
      expect([...texts].sort()).toEqual([...pushed].sort());
      expect(mostConnections).toBe(1);
      // The protocol never resends those: the new holder's backfill found them.
      expect(pushedToNobody).toBeGreaterThan(0);
      expect(milky.callsTo("get_history_messages").length).toBeGreaterThan(0);
    } finally {
      clearInterval(watch);
    }
  }, 30_000);
});
