import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { LaneProducer, LaneStore } from "@nahida/lanes";
import { TypedQueue, createRedis } from "@nahida/queue";
import {
  TEST_REDIS_URL,
  clearQueuePrefix,
  createTestDatabase,
  testQueuePrefix,
  waitFor,
  type TestDatabase,
} from "../support/infra";
import { spawnTsProcess, type SpawnedProcess } from "../support/processes";
import { LANE_TEST_LOG_DDL } from "./lane-test-handler";

const WORKER = "test/lanes/lane-worker.process.ts";
const SESSIONS = 200;
const MESSAGES = 5;

interface LogRow {
  lane_key: string;
  ref_id: string;
  run_id: string;
  worker_id: string;
  batch_size: number;
  seq: bigint;
}

describe("session lanes across worker processes", () => {
  let t: TestDatabase;
  let prefix: string;
  let redis: Redis;
  let wakeQueue: TypedQueue<"lanes">;
  let producer: LaneProducer;
  const workers: SpawnedProcess[] = [];

  const workerEnv = (extra: Record<string, string> = {}) => ({
    DATABASE_URL: t.url,
    REDIS_URL: TEST_REDIS_URL,
    NAHIDA_QUEUE_PREFIX: prefix,
    ...extra,
  });

  beforeAll(async () => {
    t = await createTestDatabase("lanes");
    prefix = testQueuePrefix("lanes");
    await t.db.pool.query(LANE_TEST_LOG_DDL);
    redis = createRedis({ url: TEST_REDIS_URL });
    wakeQueue = new TypedQueue("lanes", { connection: redis, prefix });
    producer = new LaneProducer(t.db, wakeQueue);
  });

  afterAll(async () => {
    for (const w of workers) w.kill("SIGKILL");
    await wakeQueue?.close();
    redis?.disconnect();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await t?.drop();
  });

  it(`runs ${SESSIONS} sessions × ${MESSAGES} messages on 3 processes: no overlap, order kept, each once`, async () => {
    const started = await Promise.all([1, 2, 3].map(() => spawnTsProcess(WORKER, workerEnv())));
    workers.push(...started);

    // Half the lanes collect, half follow up one message per run.
    const lanes = Array.from({ length: SESSIONS }, (_, i) => `test:private:${i}`);
    await Promise.all(lanes.filter((_, i) => i % 2 === 1).map((lane) => new LaneStore(t.db).setMode(lane, "followup")));

    const t0 = Date.now();
    for (let m = 1; m <= MESSAGES; m++) {
      await Promise.all(lanes.map((lane) => producer.append(lane, { kind: "event", refId: `${lane}#${m}` })));
    }
    const rows = await waitFor(
      async () => {
        const r = await t.db.pool.query<LogRow>("SELECT * FROM lane_test_log ORDER BY seq");
        return r.rows.length >= SESSIONS * MESSAGES ? r.rows : undefined;
      },
      90_000,
      "every message to be handled",
      100,
    );
    const elapsedMs = Date.now() - t0;
    // Give a duplicate (if any) a moment to show up before counting.
    await new Promise((r) => setTimeout(r, 500));
    const final = (await t.db.pool.query<LogRow>("SELECT * FROM lane_test_log ORDER BY seq")).rows;

    expect(final.length).toBe(SESSIONS * MESSAGES);
    const seen = new Set(final.map((r) => r.ref_id));
    expect(seen.size).toBe(SESSIONS * MESSAGES);

    const byLane = new Map<string, LogRow[]>();
    for (const row of final) byLane.set(row.lane_key, [...(byLane.get(row.lane_key) ?? []), row]);
    for (const [lane, laneRows] of byLane) {
      expect(laneRows.map((r) => r.ref_id)).toEqual(Array.from({ length: MESSAGES }, (_, i) => `${lane}#${i + 1}`));
      if (Number(lane.split(":")[2]) % 2 === 1) expect(laneRows.every((r) => r.batch_size === 1)).toBe(true);
    }

    expect(await redis.lrange(`${prefix}:overlaps`, 0, -1)).toEqual([]);
    // Postgres's own view: per lane, no run starts before the previous one finished.
    const overlapping = await t.db.pool.query(`
      SELECT a.lane_key FROM lane_runs a JOIN lane_runs b
        ON a.lane_key = b.lane_key AND a.id <> b.id
       AND a.started_at < b.finished_at AND b.started_at < a.finished_at
       AND a.status = 'succeeded' AND b.status = 'succeeded'
       WHERE a.started_at <= b.started_at`);
    expect(overlapping.rowCount).toBe(0);

    const workersUsed = new Set(final.map((r) => r.worker_id));
    expect(workersUsed.size).toBe(3);
    const open = await t.db.pool.query("SELECT count(*)::int AS n FROM lane_items WHERE status <> 'done'");
    expect(open.rows[0].n).toBe(0);
    const runs = await t.db.pool.query("SELECT count(*)::int AS n FROM lane_runs");
    console.info(`lanes: ${final.length} messages in ${elapsedMs} ms over ${runs.rows[0].n} runs on ${workersUsed.size} processes`);

    await Promise.all(started.map(async (w) => {
      w.kill("SIGTERM");
      expect(await w.exited).toBe(0);
    }));
    workers.length = 0;
  }, 120_000);

  it("takes over a session whose worker is SIGKILLed mid-run, and answers it once", async () => {
    const env = workerEnv({ LANE_LEASE_MS: "3000", LANE_SWEEP_MS: "500" });
    const [a, b] = await Promise.all([spawnTsProcess(WORKER, env), spawnTsProcess(WORKER, env)]);
    workers.push(a!, b!);
    const lane = "test:group:kill";
    await producer.append(lane, { kind: "event", refId: `${lane}#slow-1` });
    await producer.append(lane, { kind: "event", refId: `${lane}#after-2` });

    const owner = await waitFor(
      async () => {
        const r = await t.db.pool.query<{ worker_id: string }>(
          "SELECT worker_id FROM lane_runs WHERE lane_key = $1 AND status = 'running'",
          [lane],
        );
        return r.rows[0]?.worker_id;
      },
      20_000,
      "the slow run to start",
    );
    const victim = [a!, b!].find((w) => owner.endsWith(`:${w.pid}`))!;
    const survivor = [a!, b!].find((w) => w !== victim)!;
    const killedAt = Date.now();
    victim.kill("SIGKILL");
    expect(await victim.exited).toBe("SIGKILL");

    const rows = await waitFor(
      async () => {
        const r = await t.db.pool.query<LogRow>("SELECT * FROM lane_test_log WHERE lane_key = $1 ORDER BY seq", [lane]);
        return r.rows.length >= 2 ? r.rows : undefined;
      },
      30_000,
      "the lane to be taken over",
    );
    const takeoverMs = Date.now() - killedAt;
    await new Promise((r) => setTimeout(r, 1_000));
    const final = (await t.db.pool.query<LogRow>("SELECT * FROM lane_test_log WHERE lane_key = $1 ORDER BY seq", [lane])).rows;
    expect(final.map((r) => r.ref_id)).toEqual([`${lane}#slow-1`, `${lane}#after-2`]);
    expect(final.every((r) => r.worker_id.endsWith(`:${survivor.pid}`))).toBe(true);
    expect(rows.length).toBe(2);
    const lost = await t.db.pool.query("SELECT status FROM lane_runs WHERE lane_key = $1 AND worker_id = $2", [lane, owner]);
    expect(lost.rows.map((r) => r.status)).toEqual(["lost"]);
    expect(takeoverMs).toBeLessThan(30_000);
    console.info(`lanes: takeover after SIGKILL in ${takeoverMs} ms (lease 3000 ms)`);
  }, 60_000);
});
