import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import type { Redis } from "ioredis";
import { systemClock } from "@nahida/contracts";
import { RetentionRepository, type RetentionTarget } from "@nahida/db";
import { createMetrics } from "@nahida/observability";
import { RedisLeadership, createRedis } from "@nahida/queue";
import { TEST_REDIS_URL, clearQueuePrefix, createTestDatabase, testQueuePrefix, waitFor, type TestDatabase } from "../../../test/support/infra";
import { startJanitor, type RunningJanitor } from "./janitor";

const DAY = 86_400_000;
const KEEP: Record<RetentionTarget, number> = {
  raw_events: 7,
  inbound_messages: 30,
  inbound_quarantine: 30,
  lane_items: 7,
  lane_runs: 7,
  deliveries: 30,
  session_events: 30,
  cron_runs: 0,
};

describe("the retention janitor (real Postgres and Redis)", () => {
  let t: TestDatabase;
  let redis: Redis;
  let prefix: string;
  const janitors: RunningJanitor[] = [];
  const q = (sql: string, values: unknown[] = []) => t.db.pool.query(sql, values);
  const count = async (sql: string) => (await q(sql)).rows[0].n as number;

  beforeAll(async () => {
    t = await createTestDatabase("janitor");
    redis = createRedis({ url: TEST_REDIS_URL });
    prefix = testQueuePrefix("janitor");
  });
  afterAll(async () => {
    await Promise.all(janitors.map((j) => j.stop()));
    redis?.disconnect();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await t?.drop();
  });

  it("one of two replicas prunes every target in batches, by its own retention, and counts what it pruned", async () => {
    // 25 messages 40 days old, 25 from 10 days ago, 25 from today; each with a finished
    // lane item and a sent delivery of the same age.
    for (const [ageDays, n] of [[40, 25], [10, 25], [0, 25]] as const) {
      const at = new Date(Date.now() - ageDays * DAY);
      await q(
        `INSERT INTO inbound_messages (id, channel, dedupe_key, platform_message_id, chat_address, message, raw, sent_at, received_at)
         SELECT gen_random_uuid(), 'telegram', $1 || g, g::text, 'telegram:private:1', '{}', '{"update_id": 1}', $2, $2 FROM generate_series(1, $3) g`,
        [`d${ageDays}-`, at, n],
      );
      await q(`INSERT INTO deliveries (id, target, message, status, source, created_at, updated_at) SELECT gen_random_uuid(), 'telegram:private:1', '{}', 'sent', 'agent', $1, $1 FROM generate_series(1, $2)`, [at, n]);
    }
    await q(`INSERT INTO lanes (key) VALUES ('chat:1')`);
    await q(
      `INSERT INTO lane_items (id, lane_key, seq, kind, ref_id, status, created_at, done_at)
       SELECT gen_random_uuid(), 'chat:1', g, 'inbound', g::text, 'done', now() - interval '10 days', now() - interval '10 days' FROM generate_series(1, 25) g`,
    );

    const metrics = createMetrics();
    const logger = pino({ level: "silent" });
    for (const holder of ["a", "b"]) {
      janitors.push(
        startJanitor({
          retention: new RetentionRepository(t.db.pool),
          keepDays: KEEP,
          leadership: new RedisLeadership(redis, `${prefix}:janitor`, holder, 3_000),
          clock: systemClock,
          logger,
          metrics: metrics.janitor,
          batchSize: 10,
          intervalMs: 60_000,
        }),
      );
    }
    await waitFor(async () => ((await metrics.janitor.lastPass.get()).values[0]?.value ?? 0) > 0 || undefined, 20_000, "a janitor pass to finish");

    expect(await count(`SELECT count(*)::int AS n FROM inbound_messages`)).toBe(50);
    expect(await count(`SELECT count(*)::int AS n FROM inbound_messages WHERE raw IS NOT NULL`)).toBe(25);
    expect(await count(`SELECT count(*)::int AS n FROM deliveries`)).toBe(50);
    expect(await count(`SELECT count(*)::int AS n FROM lane_items`)).toBe(0);
    const pruned = Object.fromEntries((await metrics.janitor.pruned.get()).values.map((v) => [v.labels.target, v.value]));
    // Exactly once each: one replica led, the other never pruned the same rows again.
    // The 40-day-old messages went before their raw events would have been emptied.
    expect(pruned).toEqual({ raw_events: 25, inbound_messages: 25, deliveries: 25, lane_items: 25 });
  });
});
