// Fire lag of the scheduler: JOBS notify jobs `every PERIOD`, their slots spread evenly over
// the period, fired by SCHEDULERS scheduler processes and sent by DELIVERIES delivery
// processes (each its own OS process, started through the launcher) to the fake Telegram
// in this process. The lag of a fire is the time from its slot to the sendMessage call at
// the fake. The floor, measured in the same run on the same machine: a timer in this process
// that calls sendMessage at each slot directly, for as many sends per second.
//   npm run bench:cron -- [--jobs 10000] [--period 60] [--schedulers 3] [--deliveries 2] [--help]
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import pg from "pg";
import { migrate } from "@nahida/db";
import { startFakeTelegram, type FakeTelegram } from "../test/fakes/telegram-bot-api.fake";
import { TEST_POSTGRES_URL, TEST_REDIS_URL, clearQueuePrefix, dropDatabase, uniqueName, waitFor } from "../test/support/infra";
import { TEST_BOT_TOKEN } from "../test/support/nahida-harness";
import { percentile } from "./support/latency";
import { processCpuMs } from "./support/proc-cpu";
import { startServiceProcess, type ServiceProcess } from "./support/service-process";

const HELP = `npm run bench:cron -- [options]
  --jobs N          notify jobs, one chat each (default 10000)
  --period S        every S seconds; slots spread evenly over it (default 60)
  --periods P       periods measured after the first (warm-up) one (default 1)
  --schedulers N    scheduler processes (default 3)
  --deliveries N    delivery processes (default 2)
  --floor-seconds S length of the floor measurement (default 10)
  --no-bullmq       skip the BullMQ job-scheduler comparison`;

const { values: args } = parseArgs({
  options: {
    jobs: { type: "string", default: "10000" },
    period: { type: "string", default: "60" },
    periods: { type: "string", default: "1" },
    schedulers: { type: "string", default: "3" },
    deliveries: { type: "string", default: "2" },
    "floor-seconds": { type: "string", default: "10" },
    "no-bullmq": { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  console.log(HELP);
  process.exit(0);
}
const int = (name: keyof typeof args) => {
  const n = Number(args[name]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
  return n;
};
const JOBS = int("jobs");
const PERIOD_MS = int("period") * 1000;
const PERIODS = int("periods");
const SCHEDULERS = int("schedulers");
const DELIVERIES = int("deliveries");
const FLOOR_MS = int("floor-seconds") * 1000;
const CHAT_BASE = 950_000_000;

const fmt = (ms: number) => `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
function summary(lags: number[]): string {
  const sorted = [...lags].sort((a, b) => a - b);
  return `n=${sorted.length} p50 ${fmt(percentile(sorted, 50))}  p90 ${fmt(percentile(sorted, 90))}  p99 ${fmt(percentile(sorted, 99))}  max ${fmt(sorted.at(-1) ?? NaN)}`;
}

/** Floor: a timer here calls sendMessage at each slot, at the rate the scheduler will fire. */
async function measureFloor(telegram: FakeTelegram): Promise<number[]> {
  const rate = JOBS / (PERIOD_MS / 1000);
  const count = Math.round((rate * FLOOR_MS) / 1000);
  const start = Date.now() + 500;
  const url = `${telegram.apiRoot}/bot${TEST_BOT_TOKEN}/sendMessage`;
  const lags: number[] = [];
  await Promise.all(
    Array.from({ length: count }, (_, i) => {
      const slot = start + (i * 1000) / rate;
      return new Promise<void>((resolve) =>
        setTimeout(async () => {
          await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ chat_id: 1, text: `floor ${i}` }) });
          lags.push(Date.now() - slot);
          resolve();
        }, slot - Date.now()),
      );
    }),
  );
  return lags;
}

/**
 * BullMQ job schedulers, the same count and spread: lag from each slot to the worker
 * receiving its job, over one period after one period of warm-up; and how long creating
 * them took.
 */
async function measureBullmqSchedulers(): Promise<{ lags: number[]; upsertMs: number }> {
  const prefix = `bench-cron-bq-${randomUUID().slice(0, 8)}`;
  const connection = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue("cron", { connection, prefix });
  const lags: number[] = [];
  let measureFrom = Infinity;
  let measureTo = Infinity;
  const worker = new Worker(
    "cron",
    async (job) => {
      const slot = job.timestamp + (job.opts.delay ?? 0);
      if (slot >= measureFrom && slot < measureTo) lags.push(Date.now() - slot);
    },
    { connection: new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: null }), prefix, concurrency: 50 },
  );
  try {
    const started = Date.now();
    for (let from = 0; from < JOBS; from += 200) {
      await Promise.all(
        Array.from({ length: Math.min(200, JOBS - from) }, (_, k) =>
          queue.upsertJobScheduler(`job-${from + k}`, { every: PERIOD_MS, offset: Math.floor(((from + k) * PERIOD_MS) / JOBS) }, { name: "fire", data: {} }),
        ),
      );
    }
    const upsertMs = Date.now() - started;
    measureFrom = Date.now() + PERIOD_MS;
    measureTo = measureFrom + PERIODS * PERIOD_MS;
    await new Promise((r) => setTimeout(r, measureTo - Date.now() + 2_000));
    return { lags, upsertMs };
  } finally {
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    connection.disconnect();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
  }
}

async function main() {
  const name = `nahida_b_${uniqueName("cron")}`;
  const url = new URL(TEST_POSTGRES_URL);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  const prefix = `bench-cron-${randomUUID().slice(0, 8)}`;
  await migrate({ databaseUrl });
  const telegram = await startFakeTelegram({ botUsername: "nahida_test_bot", botId: 7000000001 });
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  const procs: ServiceProcess[] = [];
  try {
    console.log(`cron fire lag: ${JOBS} jobs every ${PERIOD_MS / 1000} s (${(JOBS / (PERIOD_MS / 1000)).toFixed(0)} fires/s), ${SCHEDULERS} schedulers, ${DELIVERIES} deliveries`);
    const floor = await measureFloor(telegram);
    console.log(`floor  (timer → sendMessage in one process):       ${summary(floor)}`);
    telegram.reset();

    const env = {
      DATABASE_URL: databaseUrl,
      REDIS_URL: TEST_REDIS_URL,
      NAHIDA_QUEUE_PREFIX: prefix,
      TELEGRAM_BOT_TOKEN: TEST_BOT_TOKEN,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      DATABASE_POOL_SIZE: "6",
      SCHEDULER_MIN_INTERVAL_MS: "1000",
      LOG_LEVEL: "warn",
    };
    const start = async (service: string) => {
      const p = await startServiceProcess("services/launcher/src/main.ts", { ...env, NAHIDA_SERVICES: service, LOG_LEVEL: "info" }, { readyText: "nahida started", timeoutMs: 60_000 });
      procs.push(p);
      return p;
    };
    const schedulers = await Promise.all(Array.from({ length: SCHEDULERS }, () => start("scheduler")));
    const deliveries = await Promise.all(Array.from({ length: DELIVERIES }, () => start("delivery")));

    // The jobs, written in bulk: slot k of job i is anchor_i + k·period, anchors spread evenly.
    const t0 = Date.now() + 2_000;
    const anchors = Array.from({ length: JOBS }, (_, i) => t0 - PERIOD_MS + Math.floor((i * PERIOD_MS) / JOBS));
    for (let from = 0; from < JOBS; from += 1000) {
      const ids = anchors.slice(from, from + 1000).map((_, k) => from + k);
      await pool.query(
        `INSERT INTO cron_jobs (id, name, schedule, tz, anchor_at, target, payload, owner, next_slot, next_run_at)
         SELECT gen_random_uuid(), 'bench ' || i, $1::jsonb, 'UTC', 'epoch'::timestamptz + a * interval '1 millisecond', 'telegram:private:' || ($2::bigint + i),
                $3::jsonb, 'bench', 'epoch'::timestamptz + (a + $4::bigint) * interval '1 millisecond', 'epoch'::timestamptz + (a + $4::bigint) * interval '1 millisecond'
           FROM unnest($5::int[], $6::bigint[]) AS u(i, a)`,
        [JSON.stringify({ kind: "every", every_ms: PERIOD_MS }), CHAT_BASE, JSON.stringify({ kind: "notify", text: "bench", attachments: [] }), PERIOD_MS, ids, ids.map((i) => anchors[i]!)],
      );
    }
    const anchorOf = (chatId: number) => anchors[chatId - CHAT_BASE]!;

    const cpuOf = (set: ServiceProcess[]) => set.reduce((sum, p) => sum + (processCpuMs(p.pid) ?? NaN), 0);
    // The first period warms up (JIT, pools); the next PERIODS are measured.
    const measureFrom = t0 + PERIOD_MS;
    const measureTo = measureFrom + PERIODS * PERIOD_MS;
    await new Promise((r) => setTimeout(r, measureFrom - Date.now()));
    const cpuBefore = { schedulers: cpuOf(schedulers), deliveries: cpuOf(deliveries) };
    await new Promise((r) => setTimeout(r, measureTo - Date.now()));
    const cpuMs = { schedulers: cpuOf(schedulers) - cpuBefore.schedulers, deliveries: cpuOf(deliveries) - cpuBefore.deliveries };
    await pool.query("WITH j AS (SELECT id FROM cron_jobs ORDER BY id FOR UPDATE) UPDATE cron_jobs c SET enabled = false, next_run_at = NULL FROM j WHERE c.id = j.id");
    await waitFor(async () => {
      const { rows } = await pool.query<{ open: string }>("SELECT count(*) AS open FROM cron_runs WHERE status IN ('claimed', 'running', 'retrying')");
      return Number(rows[0]!.open) === 0 ? true : undefined;
    }, 120_000, "every fired run to be sent", 500);

    const lags: number[] = [];
    for (const call of telegram.sent()) {
      const at = call.at.getTime();
      const anchor = anchorOf(Number(call.params.chat_id));
      const slot = anchor + Math.floor((at - anchor) / PERIOD_MS) * PERIOD_MS;
      if (slot >= measureFrom && slot < measureTo) lags.push(at - slot);
    }
    const { rows: statuses } = await pool.query<{ status: string; n: string }>(
      "SELECT status, count(*) AS n FROM cron_runs WHERE slot >= to_timestamp($1 / 1000.0) AND slot < to_timestamp($2 / 1000.0) GROUP BY status ORDER BY status",
      [measureFrom, measureTo],
    );
    const { rows: dup } = await pool.query<{ n: string }>("SELECT count(*) AS n FROM (SELECT job_id, slot FROM cron_runs GROUP BY 1, 2 HAVING count(*) > 1) d");
    const seconds = (measureTo - measureFrom) / 1000;
    console.log(`nahida (slot → sendMessage, ${SCHEDULERS}+${DELIVERIES} processes): ${summary(lags)}`);
    console.log(`runs of measured slots: ${statuses.map((r) => `${r.status} ${r.n}`).join(", ")}; duplicate slots: ${dup[0]!.n}; expected ${JOBS * PERIODS}`);
    if (!args["no-bullmq"]) {
      for (const p of procs) await p.stop().catch(() => undefined);
      procs.length = 0;
      const bullmq = await measureBullmqSchedulers();
      console.log(`bullmq job schedulers (slot → worker receives, 1 process):  ${summary(bullmq.lags)}; creating ${JOBS} took ${bullmq.upsertMs} ms`);
    }
    console.log(
      `CPU per fire: schedulers ${(cpuMs.schedulers / (JOBS * PERIODS)).toFixed(2)} ms, deliveries ${(cpuMs.deliveries / (JOBS * PERIODS)).toFixed(2)} ms (${seconds} s measured)`,
    );
  } finally {
    await Promise.all(procs.map((p) => p.stop().catch(() => undefined)));
    await pool.end();
    await telegram.close();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await dropDatabase(databaseUrl);
  }
}

await main();
