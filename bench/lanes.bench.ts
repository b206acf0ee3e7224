// Lane throughput and latency: N sessions × M messages through W worker processes on the
// real Postgres and Redis. Prints messages/s and the p50/p95 from append to commit.
//   npm run bench:lanes -- [sessions=200] [messages=5] [workers=3]
import { LaneProducer } from "@nahida/lanes";
import { TypedQueue, createRedis } from "@nahida/queue";
import { TEST_REDIS_URL, clearQueuePrefix, createTestDatabase, testQueuePrefix } from "../test/support/infra";
import { spawnTsProcess } from "../test/support/processes";
import { LANE_TEST_LOG_DDL } from "../test/lanes/lane-test-handler";

const [sessions = 200, messages = 5, workerCount = 3] = process.argv.slice(2).map(Number);
const t = await createTestDatabase("bench_lanes");
const prefix = testQueuePrefix("bench_lanes");
await t.db.pool.query(LANE_TEST_LOG_DDL);
await t.db.pool.query("ALTER TABLE lane_test_log ADD COLUMN logged_at timestamptz NOT NULL DEFAULT clock_timestamp()");
const redis = createRedis({ url: TEST_REDIS_URL });
const wakeQueue = new TypedQueue("lanes", { connection: redis, prefix });
const producer = new LaneProducer(t.db, wakeQueue);
const workers = await Promise.all(
  Array.from({ length: workerCount }, () =>
    spawnTsProcess("test/lanes/lane-worker.process.ts", {
      DATABASE_URL: t.url,
      REDIS_URL: TEST_REDIS_URL,
      NAHIDA_QUEUE_PREFIX: prefix,
      LANE_MAX_WORK_MS: "0",
    }),
  ),
);

const total = sessions * messages;
const started = Date.now();
for (let m = 1; m <= messages; m++) {
  await Promise.all(
    Array.from({ length: sessions }, (_, s) => producer.append(`bench:private:${s}`, { kind: "event", refId: `bench:private:${s}#${m}` })),
  );
}
const appendedMs = Date.now() - started;
for (;;) {
  const { rows } = await t.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM lane_test_log");
  if (rows[0]!.n >= total) break;
  await new Promise((r) => setTimeout(r, 20));
}
const elapsedMs = Date.now() - started;
const latency = await t.db.pool.query<{ p50: number; p95: number; runs: number }>(`
  SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50, percentile_cont(0.95) WITHIN GROUP (ORDER BY ms) AS p95,
         (SELECT count(*)::int FROM lane_runs) AS runs
    FROM (SELECT extract(epoch FROM l.logged_at - i.created_at) * 1000 AS ms
            FROM lane_test_log l JOIN lane_items i ON i.ref_id = l.ref_id) x`);
const r = latency.rows[0]!;
console.log(
  `lanes: ${total} messages (${sessions} sessions × ${messages}) on ${workerCount} workers: ` +
    `${Math.round((total / elapsedMs) * 1000)} msg/s, appends done in ${appendedMs} ms, total ${elapsedMs} ms, ` +
    `${r.runs} runs, append→commit p50 ${Number(r.p50).toFixed(1)} ms p95 ${Number(r.p95).toFixed(1)} ms`,
);

for (const w of workers) w.kill("SIGTERM");
await Promise.all(workers.map((w) => w.exited));
await wakeQueue.close();
redis.disconnect();
await clearQueuePrefix(TEST_REDIS_URL, prefix);
await t.drop();
