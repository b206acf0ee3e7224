import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { systemClock, type OutboundMessage } from "@nahida/contracts";
import { createRepositories, type Repositories } from "@nahida/db";
import { TypedQueue, createRedis } from "@nahida/queue";
import { TEST_REDIS_URL, clearQueuePrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from "../../../test/support/infra";
import { Outbox, type OutboxRequest } from "./outbox";

const text = (t: string): OutboundMessage => ({ text: t, attachments: [], extra: {} });

describe("Outbox (real Postgres and Redis)", () => {
  let t: TestDatabase;
  let redis: Redis;
  let prefix: string;
  let queue: TypedQueue<"outbound">;
  let repos: Repositories;
  let outbox: Outbox;
  let sessionId: string;

  beforeAll(async () => {
    t = await createTestDatabase("outbox");
    redis = createRedis({ url: TEST_REDIS_URL });
    prefix = testQueuePrefix("outbox");
    queue = new TypedQueue("outbound", { connection: redis, prefix });
    repos = createRepositories(t.db);
    outbox = new Outbox({ ...repos, transaction: (fn) => t.db.prisma.$transaction(fn), queue, channels: ["telegram"], deliveryTtlMs: 60_000, clock: systemClock });
    sessionId = (await repos.sessions.resolve("telegram:private:1", "telegram")).session.id;
  });
  afterAll(async () => {
    await queue?.close();
    redis?.disconnect();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await t?.drop();
  });

  const events = async () => (await t.db.pool.query("SELECT count(*)::int AS n FROM turns WHERE session_id = $1 AND role = 'event'", [sessionId])).rows[0].n;
  const job = async (id: string) => queue.queue.getJob(id);

  it("refuses a bad address, an unknown channel, a path outside the workspace and an unknown session, writing nothing", async () => {
    const base: OutboxRequest = { target: "telegram:private:1", message: text("x"), source: "test" };
    const refused = [
      await outbox.send({ ...base, target: "telegram:1" }),
      await outbox.send({ ...base, target: "milky:private:1" }),
      await outbox.send({ ...base, message: { ...text("x"), attachments: [{ type: "photo", path: "../etc/passwd" }] } }),
      await outbox.send({ ...base, sessionId: "00000000-0000-4000-8000-00000000dead", recordEvent: true }),
    ];
    expect(refused.map((r) => (r.ok ? "ok" : r.error.code))).toEqual(["invalid_address", "not_found", "bad_request", "not_found"]);
    expect((await t.db.pool.query("SELECT count(*)::int AS n FROM deliveries")).rows[0].n).toBe(0);
  });

  it("writes inside a caller's transaction and enqueues only on dispatch; a rollback leaves nothing", async () => {
    const request: OutboxRequest = { target: "telegram:private:1", message: text("in tx"), source: "test", sessionId, recordEvent: true };
    await expect(
      t.db.prisma.$transaction(async (tx) => {
        const sent = await outbox.send(request, tx);
        expect(sent.ok).toBe(true);
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect((await t.db.pool.query("SELECT count(*)::int AS n FROM deliveries WHERE message->>'text' = 'in tx'")).rows[0].n).toBe(0);
    expect(await events()).toBe(0);

    const id = await t.db.prisma.$transaction(async (tx) => {
      const sent = await outbox.send(request, tx);
      if (!sent.ok) throw new Error(sent.error.message);
      return sent.value.delivery.id;
    });
    expect(await job(id)).toBeUndefined();
    await outbox.dispatch([id]);
    expect((await job(id))?.data).toEqual({ deliveryId: id });
    expect(await events()).toBe(1);
  });

  it("keeps one delivery and one event per idempotency key, even with the same delivery id again or concurrent requests", async () => {
    const before = await events();
    const request: OutboxRequest = {
      target: "telegram:private:1",
      message: text("once"),
      source: "cron:job-1",
      sessionId,
      recordEvent: true,
      idempotencyKey: "cron:job-1:2026-12-01T10:00",
      deliveryId: "6f1c2d3e-0000-4000-8000-0000000000a1",
    };
    const results = await Promise.all(Array.from({ length: 8 }, () => outbox.send(request)));
    const retried = await t.db.prisma.$transaction((tx) => outbox.send(request, tx));
    const all = [...results, retried].map((r) => (r.ok ? r.value : null));
    expect(all.every((r) => r?.delivery.id === request.deliveryId)).toBe(true);
    expect(all.filter((r) => r?.created)).toHaveLength(1);
    expect(await events()).toBe(before + 1);

    const other = await outbox.send({ ...request, message: text("something else") });
    expect(other.ok ? "ok" : other.error.code).toBe("conflict");
  });
});
