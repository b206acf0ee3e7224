import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { startAgentWorker, type RunningAgentWorker } from "@nahida/agent-worker";
import { recoveryTimings, systemClock } from "@nahida/contracts";
import { createRepositories } from "@nahida/db";
import { CronJobs } from "@nahida/cron";
import { Outbox } from "@nahida/outbox";
import { createLogger } from "@nahida/observability";
import { TypedQueue, createRedis } from "@nahida/queue";
import { TEST_REDIS_URL, clearQueuePrefix, createTestDatabase, testQueuePrefix, waitFor, type TestDatabase } from "../support/infra";

describe("inbound sweep", () => {
  let t: TestDatabase;
  let redis: Redis;
  let prefix: string;
  let worker: RunningAgentWorker;
  const connections: Redis[] = [];
  let queues: { inbound: TypedQueue<"inbound">; lanes: TypedQueue<"lanes">; outbound: TypedQueue<"outbound"> };

  beforeAll(async () => {
    t = await createTestDatabase("inbound_sweep");
    redis = createRedis({ url: TEST_REDIS_URL });
    prefix = testQueuePrefix("inbound_sweep");
    queues = {
      inbound: new TypedQueue("inbound", { connection: redis, prefix }),
      lanes: new TypedQueue("lanes", { connection: redis, prefix }),
      outbound: new TypedQueue("outbound", { connection: redis, prefix }),
    };
    const repositories = createRepositories(t.db);
    worker = await startAgentWorker({
      db: t.db,
      repositories,
      outbox: new Outbox({
        ...repositories,
        transaction: (fn) => t.db.prisma.$transaction(fn),
        queue: queues.outbound,
        channels: ["telegram"],
        deliveryTtlMs: 60_000,
        clock: systemClock,
      }),
      cronJobs: new CronJobs({
        cron: repositories.cron,
        transaction: (fn) => t.db.prisma.$transaction(fn),
        clock: systemClock,
        defaultTz: "UTC",
        minIntervalMs: 60_000,
        maxJobsPerTarget: 50,
        channels: ["telegram"],
      }),
      clock: systemClock,
      redis,
      createConnection: () => {
        const c = createRedis({ url: TEST_REDIS_URL, blocking: true });
        connections.push(c);
        return c;
      },
      prefix,
      queues,
      workerId: "sweep-test",
      llm: null,
      timeZone: "UTC",
      maxIterations: 4,
      historyTurns: 10,
      commandTimeoutMs: 1_000,
      concurrency: 2,
      timings: { ...recoveryTimings(5_000), inboundSweepMs: 200, inboundGraceMs: 0 },
      shutdownGraceMs: 1_000,
      logger: createLogger({ level: "silent", service: "test" }),
    });
  });
  afterAll(async () => {
    await worker?.stop();
    for (const q of Object.values(queues ?? {})) await q.close();
    redis?.disconnect();
    for (const c of connections) c.disconnect();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await t?.drop();
  });

  it("marks a message it can never route as routed, so it does not block the sweep", async () => {
    await t.db.pool.query(
      `INSERT INTO inbound_messages (id, channel, dedupe_key, platform_message_id, chat_address, message, sent_at, received_at)
       VALUES (gen_random_uuid(), 'telegram', 'broken:1', '1', 'not-an-address', '{}', now(), now() - interval '1 minute')`,
    );
    await waitFor(
      async () => (await t.db.pool.query("SELECT routed_at FROM inbound_messages WHERE dedupe_key = 'broken:1'")).rows[0]?.routed_at,
      10_000,
      "the broken row to be marked",
    );
  });

  it("routes a message an ingress of the previous release stored but whose queue job was lost, and answers it once", async () => {
    // That ingress stored the row unrouted and left routing to an inbound job Redis lost.
    const message = {
      messageId: "17",
      channel: "telegram",
      chat: "telegram:private:42",
      sender: { id: "42", displayName: "Ann", label: "Ann", roles: [], isBot: false },
      text: "hello?",
      attachments: [],
      mentionsBot: true,
      timestamp: "2026-05-10T08:03:00.000Z",
    };
    const context = { timestamp: "2026-05-10T08:03:00.000Z", channel: "telegram", chatType: "private", senderLabel: "Ann", roles: [] };
    const inserted = await t.db.pool.query<{ id: string }>(
      `INSERT INTO inbound_messages (id, channel, dedupe_key, platform_message_id, chat_address, message, sent_at)
       VALUES (gen_random_uuid(), 'telegram', 'update:1', '17', 'telegram:private:42', $1, now()) RETURNING id::text AS id`,
      [JSON.stringify({ message, context })],
    );
    const id = inserted.rows[0]!.id;
    const delivery = await waitFor(
      async () => (await t.db.prisma.delivery.findMany({ where: { inboundMessageId: id } }))[0],
      10_000,
      "the swept message to be answered",
    );
    expect((delivery.message as { text: string }).text).toContain("no language model is configured");
    await new Promise((r) => setTimeout(r, 600));
    expect(await t.db.prisma.delivery.count({ where: { inboundMessageId: id } })).toBe(1);
    expect((await t.db.prisma.inboundMessage.findUnique({ where: { id } }))?.routedAt).not.toBeNull();
  });
});
