// Delivery processes alone: rounds of N queued deliveries (500 chats) sent by K delivery
// processes through the fake Bot API; prints each round's sends/s and the CPU per job of the
// delivery processes, their Postgres backends and Redis. The rounds show a process warming up
// (its first rounds cost more per job: V8 still compiling) and what a second process adds.
//   npm run bench:delivery -- [--jobs 2000] [--chats 500] [--ks 1,1,1,2,2,2]
// A K larger than the last one starts processes; a smaller one stops the newest.
import { randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { parseArgs } from "node:util";
import pg from "pg";
import { migrate } from "@nahida/db";
import { TypedQueue, createRedis } from "@nahida/queue";
import { startFakeTelegram } from "../test/fakes/telegram-bot-api.fake";
import { TEST_POSTGRES_URL, TEST_REDIS_URL, clearQueuePrefix, dropDatabase, waitFor } from "../test/support/infra";
import { freePort } from "../test/support/ports";
import { CpuOfProcessSet, processCpuMs } from "./support/proc-cpu";
import { startServiceProcess, type ServiceProcess } from "./support/service-process";

const { values: args } = parseArgs({
  options: { jobs: { type: "string", default: "2000" }, chats: { type: "string", default: "500" }, ks: { type: "string", default: "1,1,1,2,2,2" } },
});
const JOBS = Number(args.jobs);
const CHATS = Number(args.chats);
const KS = String(args.ks).split(",").map(Number);
if (![JOBS, CHATS, ...KS].every((n) => Number.isInteger(n) && n > 0)) throw new Error("--jobs, --chats and --ks take positive integers");

const runId = randomBytes(4).toString("hex");
const url = new URL(TEST_POSTGRES_URL);
url.pathname = `/nahida_b_delivery_${runId}`;
const prefix = `nahida_bench_delivery_${runId}`;
const cleanups: (() => Promise<unknown>)[] = [];
const procs: ServiceProcess[] = [];
try {
  await migrate({ databaseUrl: url.toString() });
  cleanups.push(() => dropDatabase(url.toString()), () => clearQueuePrefix(TEST_REDIS_URL, prefix));
  const telegram = await startFakeTelegram({ botUsername: "nahida_bench_bot", botId: 7000000001 });
  cleanups.push(() => telegram.close());
  const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
  cleanups.push(() => pool.end());
  const redis = createRedis({ url: TEST_REDIS_URL });
  cleanups.push(async () => redis.disconnect());
  // Jobs as the services add them: the catalog's attempts, backoff and retention.
  const outbound = new TypedQueue("outbound", { connection: redis, prefix });
  cleanups.push(() => outbound.close());
  const env = {
    DATABASE_URL: url.toString(),
    REDIS_URL: TEST_REDIS_URL,
    NAHIDA_QUEUE_PREFIX: prefix,
    NAHIDA_SERVICES: "delivery",
    TELEGRAM_BOT_TOKEN: "7000000001:BENCH-token_abc",
    TELEGRAM_API_ROOT: telegram.apiRoot,
    TELEGRAM_MODE: "webhook",
    TELEGRAM_WEBHOOK_SECRET: randomBytes(16).toString("hex"),
    TELEGRAM_WEBHOOK_PORT: String(await freePort()),
    OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
    OPENAI_API_KEY: "bench-key",
    OPENAI_MODEL: "fake-model",
    NAHIDA_TIMEZONE: "UTC",
    NAHIDA_SHUTDOWN_TIMEOUT_MS: "10000",
    LOG_LEVEL: "info",
  };
  // Redis's CPU where it runs on this machine (not in a container or elsewhere).
  let redisPid: number | undefined;
  try {
    redisPid = Number(execFileSync("pgrep", ["-x", "redis-server"]).toString().trim().split("\n")[0]);
  } catch {
    redisPid = undefined;
  }
  const redisCpu = () => (redisPid === undefined ? undefined : processCpuMs(redisPid));
  // Backends come and go with the pools' idle timeouts: sampled through the round.
  const backends = async () =>
    (await pool.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [url.pathname.slice(1)])).rows.map((r) => r.pid);
  const serviceCpu = () => procs.reduce((sum, p) => sum + (processCpuMs(p.pid) ?? 0), 0);
  const unsent = async () => (await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deliveries WHERE status IN ('queued', 'sending')")).rows[0]!.n;

  console.log(`bench:delivery: rounds of ${JOBS} deliveries over ${CHATS} chats, K = ${KS.join(", ")}`);
  for (const [round, k] of KS.entries()) {
    while (procs.length < k) procs.push(await startServiceProcess("services/launcher/src/main.ts", env, { readyText: "nahida started", timeoutMs: 120_000 }));
    while (procs.length > k) await procs.pop()!.stop();
    // Queued while paused, so the round times the sends alone.
    await outbound.queue.pause();
    const { rows } = await pool.query<{ id: string }>(
      `INSERT INTO deliveries (id, target, message, source, expires_at)
       SELECT gen_random_uuid(), 'telegram:private:' || (800000000 + g % $2::int),
              jsonb_build_object('text', 'reply ' || g, 'attachments', '[]'::jsonb, 'extra', '{}'::jsonb), 'agent', now() + interval '1 hour'
         FROM generate_series(1, $1::int) g ORDER BY g RETURNING id::text`,
      [JOBS, CHATS],
    );
    for (let i = 0; i < rows.length; i += 500) {
      await outbound.addBulk(rows.slice(i, i + 500).map((r) => ({ name: "delivery.send" as const, payload: { deliveryId: r.id }, options: { jobId: r.id } })));
    }
    const before = await backends();
    const postgres = new CpuOfProcessSet(new Set(before));
    postgres.observe(before);
    const [cpu0, redis0, t0] = [serviceCpu(), redisCpu(), Date.now()];
    await outbound.queue.resume();
    await waitFor(async () => {
      postgres.observe(await backends());
      return (await unsent()) === 0;
    }, 120_000, "every delivery to be sent", 50);
    const ms = Date.now() - t0;
    postgres.observe(await backends());
    const [cpu1, redis1] = [serviceCpu(), redisCpu()];
    const per = (ms: number) => (ms / JOBS).toFixed(2);
    console.log(
      `round ${round + 1}, K=${k}: ${((JOBS * 1000) / ms).toFixed(0)} sends/s; CPU per job: delivery ${per(cpu1 - cpu0)} ms, ` +
        `its Postgres backends ${per(postgres.totalMs())} ms, Redis ${redis0 === undefined || redis1 === undefined ? "not measured" : `${per(redis1 - redis0)} ms`}`,
    );
    const { rows: other } = await pool.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM deliveries WHERE status <> 'sent' GROUP BY 1");
    if (other.length > 0) console.log(`  not sent: ${other.map((r) => `${r.status} ${r.n}`).join(", ")}`);
  }
} finally {
  for (const p of procs.reverse()) await p.stop().catch(() => undefined);
  for (const fn of cleanups.reverse()) await fn().catch((e: unknown) => console.error(`cleanup: ${(e as Error).message}`));
}
process.exit(0);
