// The Telegram pipeline with every service in its own OS process, started through the
// launcher as a deployment would (1 ingress-telegram in webhook mode, K agent-worker, K
// delivery, 1 gateway), against the fake Telegram and a fake LLM that answers at once (both
// in this process, reached only through configuration). Prints burst throughput per K, paced
// latency, CPU per process class, Postgres statements and queue jobs per message, and
// POST /api/send; each next to a floor measured in the same run on the same Postgres and Redis.
// Statements are counted in a first, smaller run whose services reach Postgres through a
// counting proxy per class; every timing comes from a second run connected directly, since a
// proxy hop per statement on two cores would inflate latencies several times over.
// With --databases, the timings run once per way of reaching Postgres (directly with
// prepared statements, directly without, through PgBouncer in transaction mode), each
// against the first.
//   npm run bench:processes -- [--messages 2000] [--chats 500] [--ks 1,2,3] [--help]
import { execFileSync, fork, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync } from "node:fs";
import { availableParallelism } from "node:os";
import { setTimeout as delay } from "node:timers/promises";
import { parseArgs } from "node:util";
import { Queue } from "bullmq";
import pg from "pg";
import { migrate } from "@nahida/db";
import { createRedis } from "@nahida/queue";
import { startFakeOpenAI } from "../test/fakes/openai.fake";
import { startFakeTelegram } from "../test/fakes/telegram-bot-api.fake";
import { TEST_POSTGRES_URL, TEST_REDIS_URL, clearQueuePrefix, dropDatabase, uniqueName, waitFor } from "../test/support/infra";
import { startPgBouncer, type PgBouncer } from "../test/support/pgbouncer";
import { freePort } from "../test/support/ports";
import { REPO_ROOT } from "../test/support/processes";
import { startBareSendServer } from "./support/bare-send.server";
import { createJsonPoster, runPostLoad, type LoadResult } from "./support/http-load";
import { percentile } from "./support/latency";
import type { ProxySnapshotMessage } from "./support/pg-counting-proxy.process";
import { diffCounts, type StatementCounts } from "./support/pg-counting.proxy";
import { LEDGER_TABLES, prefillLedger } from "./support/ledger-prefill";
import { MINIMAL_QUEUES, createMinimalSchema, type MinimalRole } from "./support/minimal-bot";
import { CpuOfProcessSet, machineBusyMs, processCpuMs, processName } from "./support/proc-cpu";
import { diffQueueCounts, startQueueAddCounter, type QueueAddCounts } from "./support/queue-adds.counter";
import { startRawTwoHop, type RawBurstResult, type RawPacedResult } from "./support/raw-two-hop";
import { ReplyTracker, messageText } from "./support/reply-tracker";
import { startServiceProcess, type ServiceProcess } from "./support/service-process";

const HELP = `npm run bench:processes -- [options]
  --messages N         burst size per K (default 2000)
  --chats C            chats the burst and paced messages go to (default 500)
  --ks 1,2,3           agent-worker (and delivery) process counts to burst with (default 1,2,3),
                       the first the others' baseline
  --concurrency N      webhook POSTs in flight during a burst (default 16)
  --warmup N           unmeasured messages before each burst, over the same chats (default 100)
  --start-warmup N     unmeasured messages after first contact, before the first K (default 3 × --messages):
                       the K are measured from the largest down, on processes warmed up together
  --paced-rates 50,100 paced rates in msg/s (default 50,100)
  --paced-seconds S    length of each paced phase (default 10)
  --paced-k K          agent-worker/delivery processes during the paced phases (default 2)
  --api-requests N     POST /api/send requests per round, and as many to the bare route (default 1000)
  --api-rounds R       rounds of each route, taken in turns; the ratio is the median round's, the
                       lower middle one of an even count (default 5)
  --api-concurrency N  requests in flight for both (default 32)
  --raw-jobs N         jobs through the raw BullMQ two-hop (default 10000)
  --bare-in-bench      run the bare send route in this process instead of its own
  --count-chats N      chats of the statement-counting run (default 200)
  --no-proxy           skip the statement-counting run
  --no-minimal         skip the minimal bot (the baseline of the K = 1, 2, 3 figures)
  --top N              statements listed per process class (default 8)
  --databases LIST     ways of reaching Postgres to time, the first the baseline of the others
                       (default direct): direct (prepared statements), unprepared (DATABASE_POOLER=
                       transaction, still direct), pgbouncer (through PgBouncer 1.18 in transaction mode)
  --pgbouncer-pool N   PgBouncer's server connections for the database (default 20)
  --prefill N          then fill a second database with N rows (generate_series, 40 days old)
                       and take turns with the first: burst (first K) and pace (first rate) on
                       each, and pace once more on the full one while a scheduler's retention
                       janitor prunes it (default 0: no ledger phases)
  --ledger-rounds R    turns on each database, an even number keeps the order balanced;
                       figures are medians and pooled percentiles (default 4)`;

const { values: args } = parseArgs({
  options: {
    messages: { type: "string", default: "2000" },
    chats: { type: "string", default: "500" },
    ks: { type: "string", default: "1,2,3" },
    concurrency: { type: "string", default: "16" },
    warmup: { type: "string", default: "100" },
    "start-warmup": { type: "string" },
    "paced-rates": { type: "string", default: "50,100" },
    "paced-seconds": { type: "string", default: "10" },
    "paced-k": { type: "string", default: "2" },
    "api-requests": { type: "string", default: "1000" },
    "api-rounds": { type: "string", default: "5" },
    "api-concurrency": { type: "string", default: "32" },
    "raw-jobs": { type: "string", default: "10000" },
    "bare-in-bench": { type: "boolean", default: false },
    "count-chats": { type: "string", default: "200" },
    "no-proxy": { type: "boolean", default: false },
    "no-minimal": { type: "boolean", default: false },
    top: { type: "string", default: "8" },
    prefill: { type: "string", default: "0" },
    "ledger-rounds": { type: "string", default: "4" },
    databases: { type: "string", default: "direct" },
    "pgbouncer-pool": { type: "string", default: "20" },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  console.log(HELP);
  process.exit(0);
}
const int = (name: keyof typeof args) => {
  const n = Number(args[name]);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer`);
  return n;
};
const list = (name: keyof typeof args) => String(args[name]).split(",").map(Number).filter((n) => Number.isInteger(n) && n > 0);
const MESSAGES = Math.max(1, int("messages"));
const CHATS = Math.max(1, int("chats"));
const KS = list("ks");
const CONCURRENCY = Math.max(1, int("concurrency"));
const WARMUP = int("warmup");
const START_WARMUP = args["start-warmup"] === undefined ? 3 * MESSAGES : int("start-warmup");
const PACED_RATES = list("paced-rates");
const PACED_SECONDS = int("paced-seconds");
const PACED_K = Math.max(1, int("paced-k"));
/** Every K the services run at, largest first: they start at the first and only scale down. */
const K_STEPS = [...new Set([...KS, ...(PACED_RATES.length > 0 ? [PACED_K] : [])])].sort((a, b) => b - a);
const API_REQUESTS = Math.max(1, int("api-requests"));
const API_CONCURRENCY = Math.max(1, int("api-concurrency"));
const API_ROUNDS = Math.max(1, int("api-rounds"));
const RAW_JOBS = Math.max(1, int("raw-jobs"));
const TOP = int("top");
const COUNT_STATEMENTS = !args["no-proxy"];
const MINIMAL = !args["no-minimal"];
const COUNT_CHATS = Math.max(1, int("count-chats"));
const PREFILL = int("prefill");
const LEDGER_ROUNDS = Math.max(1, int("ledger-rounds"));
const DATABASE_MODES = ["direct", "unprepared", "pgbouncer"] as const;
type DatabaseMode = (typeof DATABASE_MODES)[number];
const DATABASES = String(args.databases).split(",").map((m) => {
  if (!(DATABASE_MODES as readonly string[]).includes(m)) throw new Error(`--databases: ${m} is not one of ${DATABASE_MODES.join(", ")}`);
  return m as DatabaseMode;
});
const PGBOUNCER_POOL = Math.max(1, int("pgbouncer-pool"));
if (new Set(DATABASES).size !== DATABASES.length) throw new Error("--databases names a way twice");
const DATABASE_MODE_TEXT: Record<DatabaseMode, string> = {
  direct: "directly, prepared statements",
  unprepared: "directly, DATABASE_POOLER=transaction: no prepared statements",
  pgbouncer: "through PgBouncer in transaction mode, DATABASE_POOLER=transaction",
};
/** Older than every default retention, so the janitor may prune all of it but the turns. */
const PREFILL_AGE_DAYS = 40;

const SERVICE_CLASSES = ["ingress", "agent-worker", "delivery", "gateway"] as const;
type ServiceClass = (typeof SERVICE_CLASSES)[number];
const LAUNCHER_SERVICE: Record<ServiceClass, string> = {
  ingress: "ingress-telegram",
  "agent-worker": "agent-worker",
  delivery: "delivery",
  gateway: "gateway",
};
const MINIMAL_ROLE: Partial<Record<ServiceClass, MinimalRole>> = { ingress: "webhook", "agent-worker": "worker", delivery: "sender" };
/** Who answers the messages: Nahida, or the minimal bot it is measured against. */
type System = "nahida" | "minimal";
const BOT_TOKEN = "7000000001:BENCH-token_abc";
const FIRST_CHAT = 810_000_000;
const PREWARM_CHAT = 790_000_000;
const COUNT_CHAT = 820_000_000;
const COUNT_PREWARM_CHAT = 780_000_000;
const API_CHAT = 900_000_000;
const LEDGER_CHAT = 830_000_000;
const MINIMAL_CHAT = 840_000_000;
/** Services connect as `<prefix><class>`, so pg_stat_activity tells whose a backend is. */
const APPLICATION_PREFIX = "nahida-bench-";
const log = (line: string) => console.log(line);

// ---------------------------------------------------------------- infrastructure
const runId = uniqueName("procs");
const databaseName = `nahida_b_${runId}`;
const prefix = `nahida_bench_${runId}`;
const directUrl = new URL(TEST_POSTGRES_URL);
directUrl.pathname = `/${databaseName}`;
const maintenanceUrl = new URL(TEST_POSTGRES_URL);
maintenanceUrl.pathname = "/postgres";
const cleanups: (() => Promise<unknown>)[] = [];
/** Every child process still running, for cleanup. */
const running = new Set<ServiceProcess>();

async function cleanup(): Promise<void> {
  const stopping = [...running].map(async (p) => {
    p.child.kill("SIGTERM");
    const timer = setTimeout(() => p.child.kill("SIGKILL"), 12_000);
    await p.exited;
    clearTimeout(timer);
  });
  await Promise.all(stopping);
  for (const fn of cleanups.reverse()) await fn().catch((e: unknown) => log(`cleanup: ${(e as Error).message}`));
}
process.on("SIGINT", () => void cleanup().then(() => process.exit(130)));


async function main(): Promise<void> {
  log(
    `bench:processes: ${MESSAGES} messages over ${CHATS} chats, K = ${KS.join(", ")}; paced ${PACED_RATES.join(", ")} msg/s ` +
      `for ${PACED_SECONDS} s at K = ${PACED_K}; statements counted ${COUNT_STATEMENTS ? `over ${COUNT_CHATS} chats in a run of their own` : "not at all (--no-proxy)"}`,
  );
  await migrate({ databaseUrl: directUrl.toString() });
  cleanups.push(() => dropDatabase(directUrl.toString()));
  cleanups.push(() => clearQueuePrefix(TEST_REDIS_URL, prefix));
  const direct = new pg.Pool({ connectionString: directUrl.toString(), max: 2 });
  cleanups.push(() => direct.end());
  const maintenance = new pg.Client({ connectionString: maintenanceUrl.toString() });
  await maintenance.connect();
  cleanups.push(() => maintenance.end());
  // Every service process pools up to 10 connections (libs/db's default), so K = 3 alone may
  // hold 80; with other work on the same server, "too many clients" ends the run with a 500.
  const { rows: connections } = await maintenance.query<{ max: number; used: number }>(
    "SELECT current_setting('max_connections')::int AS max, (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend') AS used",
  );
  // Ingress, gateway, K workers and senders, and the bare route's pool.
  const mayHold = 10 * (3 + 2 * Math.max(...KS, PACED_K)) + 5;
  if (connections[0]!.used + mayHold > connections[0]!.max) {
    log(`warning: Postgres allows ${connections[0]!.max} connections, ${connections[0]!.used} are in use and this run may open ${mayHold}`);
  }

  const telegram = await startFakeTelegram({ botUsername: "nahida_bench_bot", botId: 7000000001 });
  cleanups.push(() => telegram.close());
  const openai = await startFakeOpenAI();
  cleanups.push(() => openai.close());
  const tracker = new ReplyTracker(telegram, openai);
  const queueCounter = await startQueueAddCounter({ redisUrl: TEST_REDIS_URL, prefix, queues: ["lanes", "outbound"] });
  cleanups.push(() => queueCounter.close());
  let minimalDatabase: BenchDatabase | undefined;
  const mainDb: BenchDatabase = { name: databaseName, url: directUrl, pool: direct, prefix, jobs: queueCounter, inbound: { queue: "lanes", job: "lane.wake" } };

  const webhookPort = await freePort();
  const gatewayPort = await freePort();
  const webhookSecret = randomBytes(16).toString("hex");
  const apiToken = randomBytes(24).toString("hex");
  const baseEnv: Record<string, string> = {
    REDIS_URL: TEST_REDIS_URL,
    NAHIDA_QUEUE_PREFIX: prefix,
    TELEGRAM_BOT_TOKEN: BOT_TOKEN,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    TELEGRAM_MODE: "webhook",
    TELEGRAM_WEBHOOK_SECRET: webhookSecret,
    TELEGRAM_WEBHOOK_PORT: String(webhookPort),
    GATEWAY_PORT: String(gatewayPort),
    NAHIDA_API_TOKEN: apiToken,
    // The figure is the route's cost, not the limiter's verdict.
    NAHIDA_API_RATE_LIMIT_PER_MINUTE: "1000000",
    OPENAI_BASE_URL: openai.baseURL,
    OPENAI_API_KEY: "bench-key",
    OPENAI_MODEL: "fake-model",
    NAHIDA_TIMEZONE: "UTC",
    NAHIDA_SHUTDOWN_TIMEOUT_MS: "10000",
    // The default: the webhook and the gateway log a line per request, as deployed.
    LOG_LEVEL: "info",
  };

  let bouncer: PgBouncer | undefined;
  /**
   * One set of service processes: Nahida's, or the minimal bot's (its webhook, workers and
   * senders in the ingress, agent-worker and delivery classes; no gateway). Each class connects
   * as its own application_name (how the Postgres backends' CPU is split by class) and, with
   * `proxyPorts`, through its own counting proxy.
   */
  const startTopology = (o: { proxyPorts?: Record<ServiceClass, number>; mode?: DatabaseMode; db?: BenchDatabase; system?: System } = {}) => {
    const { proxyPorts, mode = "direct", db = mainDb, system = "nahida" } = o;
    const procs = new Map<ServiceClass, ServiceProcess[]>(SERVICE_CLASSES.map((c) => [c, []]));
    const databaseUrlFor = (cls: ServiceClass) => {
      const url = new URL(db.url);
      const port = proxyPorts?.[cls] ?? (mode === "pgbouncer" ? bouncer?.port : undefined);
      if (port !== undefined) {
        url.hostname = "127.0.0.1";
        url.port = String(port);
      }
      url.searchParams.set("application_name", `${APPLICATION_PREFIX}${cls}`);
      return url.toString();
    };
    const poolerEnv: Record<string, string> = mode === "direct" ? {} : { DATABASE_POOLER: "transaction", DATABASE_DIRECT_URL: db.url.toString() };
    const start = async (cls: ServiceClass): Promise<ServiceProcess> => {
      const env = { ...baseEnv, ...poolerEnv, NAHIDA_QUEUE_PREFIX: db.prefix, DATABASE_URL: databaseUrlFor(cls) };
      const proc =
        system === "nahida"
          ? await startServiceProcess("services/launcher/src/main.ts", { ...env, NAHIDA_SERVICES: LAUNCHER_SERVICE[cls] }, { readyText: "nahida started", timeoutMs: 120_000 })
          : await startServiceProcess("bench/support/minimal-bot.process.ts", { ...env, MINIMAL_ROLE: MINIMAL_ROLE[cls]! }, { readyText: "minimal bot ready", timeoutMs: 120_000 });
      procs.get(cls)!.push(proc);
      running.add(proc);
      // The CPU is read from this pid: it must be node itself, not a shell or wrapper that forks it.
      const name = processName(proc.pid);
      if (name !== "node") log(`warning: ${cls} pid ${proc.pid} runs ${name}, not node; its CPU figure is not the service's`);
      return proc;
    };
    const stopOne = async (proc: ServiceProcess) => {
      await proc.stop();
      running.delete(proc);
    };
    const scaleTo = async (k: number) => {
      const workers = procs.get("agent-worker")!;
      const deliveries = procs.get("delivery")!;
      const adding: Promise<unknown>[] = [];
      for (let i = workers.length; i < k; i++) adding.push(start("agent-worker"), start("delivery"));
      await Promise.all(adding);
      while (workers.length > k) await Promise.all([stopOne(workers.pop()!), stopOne(deliveries.pop()!)]);
    };
    return {
      procs,
      db,
      system,
      async start(k: number) {
        const t0 = Date.now();
        await Promise.all([start("ingress"), ...(system === "nahida" ? [start("gateway")] : []), scaleTo(k)]);
        log(`  services started in ${((Date.now() - t0) / 1000).toFixed(1)} s (${[...procs].filter(([, ps]) => ps.length > 0).map(([c, ps]) => `${c} pid ${ps.map((p) => p.pid).join("+")}`).join(", ")})`);
      },
      scaleTo,
      async stop() {
        await Promise.all([...procs.values()].flat().map(stopOne));
      },
    };
  };
  type Topology = ReturnType<typeof startTopology>;

  // ------------------------------------------------------------ raw floor, before any service runs
  const raw = await startRawTwoHop({ redisUrl: TEST_REDIS_URL, prefix: `${prefix}_raw`, concurrency: 16 });
  cleanups.push(() => clearQueuePrefix(TEST_REDIS_URL, `${prefix}_raw`));
  await raw.burst(Math.min(1000, RAW_JOBS), 32);
  const rawBurst: RawBurstResult = await raw.burst(RAW_JOBS, 32);
  log(`raw BullMQ two-hop: ${RAW_JOBS} jobs, ${rawBurst.jobsPerSecond.toFixed(0)} jobs/s, bench CPU ${rawBurst.cpuMsPerJob.toFixed(2)} ms/job`);
  const rawPaced = new Map<number, RawPacedResult>();
  for (const rate of PACED_RATES) {
    const r = await raw.paced(rate, Math.min(2, PACED_SECONDS));
    rawPaced.set(rate, r);
    log(`raw BullMQ two-hop paced ${rate}/s: p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms`);
  }
  await raw.close();

  // ------------------------------------------------------------ load and measurement
  const poster = createJsonPoster(Math.max(CONCURRENCY, API_CONCURRENCY));
  cleanups.push(async () => poster.close());
  const webhookUrl = new URL(`http://127.0.0.1:${webhookPort}/telegram/webhook`);
  let nextUpdateId = 1;
  let nextMarker = 1;
  /** Posts one message to a private chat through the webhook; returns its marker. */
  const postMessage = async (chatId: number): Promise<number> => {
    const marker = nextMarker++;
    const update = {
      update_id: nextUpdateId++,
      message: {
        message_id: marker,
        from: { id: chatId, is_bot: false, first_name: "Bench" },
        chat: { id: chatId, type: "private", first_name: "Bench" },
        date: Math.floor(Date.now() / 1000),
        text: messageText(marker),
      },
    };
    tracker.posted(marker, Date.now());
    const status = await poster.post(webhookUrl, update, { "x-telegram-bot-api-secret-token": webhookSecret });
    if (status !== 200) throw new Error(`webhook answered ${status}`);
    return marker;
  };
  const chatsFrom = (first: number, count: number) => Array.from({ length: count }, (_, i) => first + i);

  /** `count` messages round-robin over `chats`, `CONCURRENCY` in flight; waits for every answer. */
  const burst = async (count: number, chats: readonly number[]) => {
    const markers: number[] = [];
    let next = 0;
    const firstPost = Date.now();
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, count) }, async () => {
        while (next < count) markers.push(await postMessage(chats[next++ % chats.length]!));
      }),
    );
    const postedMs = Date.now() - firstPost;
    await tracker.waitAnswered(markers, 180_000);
    const lastReply = Math.max(...markers.map((m) => tracker.answered(m)!));
    return { markers, postedMs, elapsedMs: lastReply - firstPost };
  };

  /** `rate` messages per second for `seconds`, round-robin over `chats`; waits for every answer. */
  const paced = async (rate: number, seconds: number, chats: readonly number[]) => {
    const count = Math.max(1, Math.round(rate * seconds));
    const posts: Promise<number>[] = [];
    const t0 = Date.now();
    for (let i = 0; i < count; i++) {
      const wait = t0 + (i * 1000) / rate - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      posts.push(postMessage(chats[i % chats.length]!));
    }
    const markers = await Promise.all(posts);
    await tracker.waitAnswered(markers, 180_000);
    return { markers, latencies: tracker.latencies(markers) };
  };

  const sendUrl = new URL(`http://127.0.0.1:${gatewayPort}/api/send`);
  const auth = { authorization: `Bearer ${apiToken}` };
  const apiLoad = (url: URL, headers: Record<string, string>, requests: number, tag: string) =>
    runPostLoad({
      requests,
      concurrency: API_CONCURRENCY,
      expectedStatus: 202,
      send: (i) => poster.post(url, { target: `telegram:private:${API_CHAT + (i % 1000)}`, text: `${tag} ${i}` }, headers),
    });
  // Sends wait while a route is timed, Nahida's as the bare one: the delivery processes'
  // work is the same for both, and with it running beside them the ratio measured how the
  // two cores were shared more than either route (each run sends after it, unmeasured).
  const outbound = new Queue("outbound", { connection: { url: TEST_REDIS_URL }, prefix });
  cleanups.push(() => outbound.close());
  const routeOnly = async <T>(load: () => Promise<T>): Promise<T> => {
    await outbound.pause();
    try {
      return await load();
    } finally {
      await outbound.resume();
    }
  };
  const drainDeliveries = async () => {
    await waitFor(
      async () => {
        const { rows } = await direct.query<{ n: number }>("SELECT count(*)::int AS n FROM deliveries WHERE status IN ('queued', 'sending')");
        return rows[0]!.n === 0;
      },
      120_000,
      "every delivery to be sent",
      100,
    );
    const { rows } = await direct.query<{ n: number }>("SELECT count(*)::int AS n FROM deliveries WHERE status <> 'sent'");
    if (rows[0]!.n > 0) log(`warning: ${rows[0]!.n} deliveries ended other than sent`);
  };

  const redisPids = findPids("redis-server");
  const pgBackends = async (db: BenchDatabase) => {
    const { rows } = await maintenance.query<{ pid: number; application_name: string }>(
      "SELECT pid, application_name FROM pg_stat_activity WHERE datname = $1",
      [db.name],
    );
    return rows;
  };
  let proxies: Awaited<ReturnType<typeof startProxies>> | undefined;
  // Per-statement execution time, where the server loads pg_stat_statements (it must be in
  // shared_preload_libraries, which needs a restart; the bench says so and goes on without).
  const statementTimes = await direct
    .query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    .then(() => direct.query("SELECT 1 FROM pg_stat_statements LIMIT 1"))
    .then(
      () => true,
      (error: Error) => {
        log(`per-statement time: not measured (${error.message}; add pg_stat_statements to shared_preload_libraries and restart Postgres)`);
        return false;
      },
    );
  /** Every statement of the bench's database so far: calls, execution ms, buffer pages read. */
  const statementCounters = async (db: BenchDatabase): Promise<Map<string, StatementTime>> => {
    if (!statementTimes) return new Map();
    const { rows } = await db.pool.query<{ query: string; calls: string; ms: number; hit: string; read: string; dirtied: string }>(
      `SELECT query, calls::text, total_exec_time AS ms, shared_blks_hit::text AS hit, shared_blks_read::text AS read, shared_blks_dirtied::text AS dirtied
         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    const byQuery = new Map<string, StatementTime>();
    for (const r of rows) {
      addStatementTime(byQuery, r.query, { calls: Number(r.calls), ms: r.ms, pages: Number(r.hit) + Number(r.read), dirtied: Number(r.dirtied) });
    }
    return byQuery;
  };
  const statsRedis = createRedis({ url: TEST_REDIS_URL });
  cleanups.push(async () => statsRedis.disconnect());
  /** Every command the Redis server ran so far, by name (INFO commandstats: those scripts call are counted too). */
  const redisCommands = async (): Promise<Map<string, number>> => {
    const counts = new Map<string, number>();
    for (const m of (await statsRedis.info("commandstats")).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) counts.set(m[1]!, Number(m[2]));
    return counts;
  };
  /** The whole server's WAL so far (pg_stat_wal): what a phase wrote, full-page images included. */
  const walCounters = async () => {
    const { rows } = await maintenance.query<{ bytes: string; fpi: string; records: string }>(
      "SELECT wal_bytes::text AS bytes, wal_fpi::text AS fpi, wal_records::text AS records FROM pg_stat_wal",
    );
    return { bytes: Number(rows[0]!.bytes), fpi: Number(rows[0]!.fpi), records: Number(rows[0]!.records) };
  };

  /** Runs one phase and reads every counter before and after it. */
  const measure = async <T>(topology: Topology, messages: number, run: () => Promise<T>, countsInbound = true): Promise<{ result: T } & PhaseFigures> => {
    const { db } = topology;
    tracker.dropRecordedRequests();
    await db.jobs.settle();
    const classPids = new Map(SERVICE_CLASSES.map((c) => [c, topology.procs.get(c)!.map((p) => p.pid)]));
    const cpu0 = new Map([...classPids].map(([c, pids]) => [c, sumCpu(pids)]));
    const self0 = processCpuMs(process.pid)!;
    const proxyPid = proxies?.child.pid;
    const proxy0 = proxyPid ? processCpuMs(proxyPid) ?? 0 : 0;
    const bouncerPid = bouncer?.pid;
    const bouncer0 = bouncerPid ? processCpuMs(bouncerPid) ?? 0 : 0;
    const redis0 = sumCpu(redisPids);
    const machine0 = machineBusyMs();
    const backends0 = await pgBackends(db);
    const pgCpu = new CpuOfProcessSet(new Set(backends0.map((b) => b.pid)));
    // A backend counts for the class it was first seen serving: behind PgBouncer one server
    // connection serves every class in turn (PgBouncer sets each client's application_name).
    const classOf = new Map<number, string>();
    const observe = (rows: { pid: number; application_name: string }[]) => {
      for (const row of rows) {
        if (!classOf.has(row.pid) && row.application_name.startsWith(APPLICATION_PREFIX)) classOf.set(row.pid, row.application_name.slice(APPLICATION_PREFIX.length));
      }
      pgCpu.observe(rows.map((r) => r.pid));
    };
    observe(backends0);
    const statements0 = proxies ? await proxies.counts() : undefined;
    const wal0 = await walCounters();
    const times0 = await statementCounters(db);
    const jobs0 = db.jobs.snapshot();
    const commands0 = await redisCommands();
    let sampling: Promise<void> | undefined;
    // Backends come and go with the pools' idle timeout: look at them often.
    const sampler = setInterval(() => {
      sampling ??= pgBackends(db)
        .then(observe, () => undefined)
        .finally(() => (sampling = undefined));
    }, 250);
    const t0 = Date.now();
    const result = await run();
    const wallMs = Date.now() - t0;
    clearInterval(sampler);
    await sampling;
    observe(await pgBackends(db));
    const machineMs = machineBusyMs() - machine0;
    const wal1 = await walCounters();
    const wal = { bytes: wal1.bytes - wal0.bytes, fpi: wal1.fpi - wal0.fpi, records: wal1.records - wal0.records };
    const llmCalls = openai.requests.length;
    const statementTime = diffStatementTimes(times0, await statementCounters(db));
    await db.jobs.settle();
    // After the settle, as the job counts: what the last messages did after their sendMessage counts too.
    const commands1 = await redisCommands();
    const jobs = diffQueueCounts(jobs0, db.jobs.snapshot());
    const statements = proxies && statements0 ? diffStatementMaps(statements0, await proxies.counts()) : undefined;
    const cpuMs = new Map<string, number>([...classPids].map(([c, pids]) => [c, sumCpu(pids) - cpu0.get(c)!]));
    const postgresByClass = new Map<string, number>();
    for (const [pid, ms] of pgCpu.byPid()) {
      const cls = classOf.get(pid) ?? "other";
      postgresByClass.set(cls, (postgresByClass.get(cls) ?? 0) + ms);
    }
    cpuMs.set("postgres", [...postgresByClass.values()].reduce((a, b) => a + b, 0));
    cpuMs.set("bench", processCpuMs(process.pid)! - self0);
    if (proxyPid) cpuMs.set("proxy", (processCpuMs(proxyPid) ?? 0) - proxy0);
    if (bouncerPid) cpuMs.set("pgbouncer", (processCpuMs(bouncerPid) ?? 0) - bouncer0);
    const redisCpuMs = sumCpu(redisPids) - redis0;
    const accounted = [...cpuMs.values()].reduce((a, b) => a + b, 0) + redisCpuMs;
    // The ingress wakes the lane of every message it stores (a job, or one absorbed by the
    // lane's deduplication id); fewer events seen means the counter missed some (the
    // streams are trimmed), and every job figure would be low.
    const { queue, job } = db.inbound;
    const wakes = (jobs.added.get(`${queue}/${job}`) ?? 0) + (jobs.notCreated.get(`${queue} deduplicated`) ?? 0);
    if (countsInbound && wakes < messages) log(`warning: ${wakes} ${queue}/${job} jobs seen for ${messages} messages; job counts are suspect`);
    const redisCommandCounts = new Map([...commands1].map(([c, n]) => [c, n - (commands0.get(c) ?? 0)] as const).filter(([, n]) => n > 0));
    return { result, messages, wallMs, cpuMs, postgresByClass, redisCpuMs, othersCpuMs: machineMs - accounted, statements, jobs, wal, statementTime, redisCommands: redisCommandCounts, llmCalls };
  };

  // ------------------------------------------------------------ statements, through counting proxies
  let counted: CountedFigures | undefined;
  if (COUNT_STATEMENTS) {
    log("statements (services behind counting proxies; their timings are not used):");
    proxies = await startProxies();
    const topology = startTopology({ proxyPorts: proxies.ports });
    await topology.start(1);
    await burst(50, chatsFrom(COUNT_PREWARM_CHAT, 25));
    const chats = chatsFrom(COUNT_CHAT, COUNT_CHATS);
    const firstContact = await measure(topology, COUNT_CHATS, () => burst(COUNT_CHATS, chats));
    log(`  first contact: ${COUNT_CHATS} new chats, one message each: ${statementBreakdown(firstContact)} statements/msg`);
    // Each chat gets a message every few seconds, far more than one answer takes: one message per run.
    const steadyRate = Math.min(50, COUNT_CHATS);
    const steady = await measure(topology, COUNT_CHATS, () => paced(steadyRate, COUNT_CHATS / steadyRate, chats));
    log(`  steady: ${COUNT_CHATS} known chats at ${steadyRate}/s, one message per run: ${statementBreakdown(steady)} statements/msg`);
    const batched = await measure(topology, 2 * COUNT_CHATS, () => burst(2 * COUNT_CHATS, chats));
    log(`  burst: ${2 * COUNT_CHATS} messages over the same chats (batched runs): ${statementBreakdown(batched)} statements/msg`);
    const bursts = await countedBursts(topology, chats, batched);
    const apiRequests = Math.min(200, API_REQUESTS);
    const api = await measure(topology, apiRequests, () => apiLoad(sendUrl, auth, apiRequests, "count"), false);
    log(`  POST /api/send: ${perMessage(api, "gateway")} statements/request`);
    await drainDeliveries();
    await topology.stop();
    let minimal: Map<number, PhaseFigures> | undefined;
    if (MINIMAL) {
      const minimalTopology = startTopology({ proxyPorts: proxies.ports, system: "minimal", db: await minimalDb() });
      await minimalTopology.start(1);
      await burst(50, chatsFrom(COUNT_PREWARM_CHAT, 25));
      const minimalChats = chatsFrom(MINIMAL_CHAT + 50_000, COUNT_CHATS);
      await burst(COUNT_CHATS, minimalChats);
      minimal = await countedBursts(minimalTopology, minimalChats);
      await minimalTopology.stop();
    }
    counted = { firstContact, steady, batched, bursts, api, minimal };
    await proxies.close();
    proxies = undefined;
  }

  /** A burst of two messages per chat at each K (`atOne` is K = 1's, where the caller has it), statements counted. */
  async function countedBursts(topology: Topology, chats: number[], atOne?: PhaseFigures): Promise<Map<number, PhaseFigures>> {
    const byK = new Map<number, PhaseFigures>();
    for (const k of new Set([1, ...KS])) {
      if (k === 1 && atOne) {
        byK.set(1, atOne);
        continue;
      }
      await topology.scaleTo(k);
      // Unmeasured, as in the timings: the new processes' first statements (prepared once per connection).
      await burst(50, chats);
      const m = await measure(topology, 2 * COUNT_CHATS, () => burst(2 * COUNT_CHATS, chats));
      byK.set(k, m);
      log(`  ${topology.system === "minimal" ? "minimal bot, " : ""}burst K=${k}: ${statementBreakdown(m)} statements/msg, ${jobsPerMessage(m)} jobs/msg, ${fmt(redisCommandsPerMessage(m), 1)} Redis commands/msg`);
    }
    return byK;
  }

  /**
   * The minimal bot's: a database and queue prefix of its own, so that its Postgres CPU is its
   * backends' alone (not autovacuum cleaning up after Nahida's phases).
   */
  async function minimalDb(): Promise<BenchDatabase> {
    minimalDatabase ??= await openBenchDatabase("min", { queue: MINIMAL_QUEUES.inbound, job: "message" }, [MINIMAL_QUEUES.inbound, MINIMAL_QUEUES.outbound], async (url) => {
      await maintenance.query(`CREATE DATABASE ${url.pathname.slice(1)}`);
      const pool = new pg.Pool({ connectionString: url.toString(), max: 1 });
      await createMinimalSchema(pool).finally(() => pool.end());
    });
    return minimalDatabase;
  }

  /**
   * A database and queue prefix beside the bench's own (`<name>_<suffix>`): `create` makes the
   * database and its tables; dropped, cleared and closed with the rest at the end.
   */
  async function openBenchDatabase(
    suffix: string,
    inbound: BenchDatabase["inbound"],
    queues: readonly string[],
    create: (url: URL) => Promise<unknown>,
  ): Promise<BenchDatabase> {
    const name = `${databaseName}_${suffix}`;
    const url = new URL(directUrl);
    url.pathname = `/${name}`;
    await create(url);
    cleanups.push(() => dropDatabase(url.toString()));
    const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
    cleanups.push(() => pool.end());
    if (statementTimes) await pool.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    const queuePrefix = `${prefix}_${suffix}`;
    cleanups.push(() => clearQueuePrefix(TEST_REDIS_URL, queuePrefix));
    const jobs = await startQueueAddCounter({ redisUrl: TEST_REDIS_URL, prefix: queuePrefix, queues });
    cleanups.push(() => jobs.close());
    return { name, url, pool, prefix: queuePrefix, jobs, inbound };
  }

  // The floor under POST /api/send, idle until the API rounds. In the bench process its CPU
  // is the load generator's too: not measured.
  const bare: { address: string; pid?: number; close(): Promise<unknown> } = args["bare-in-bench"]
    ? await startBareSendServer({ databaseUrl: directUrl.toString(), redisUrl: TEST_REDIS_URL, prefix })
    : await startBareProcess();
  cleanups.push(() => bare.close());
  const bareUrl = new URL(`${bare.address}/send`);
  const bareCpu = () => (bare.pid === undefined ? undefined : processCpuMs(bare.pid));

  // ------------------------------------------------------------ timings, services without proxies, per way of reaching Postgres
  const timed = new Map<DatabaseMode, TimedFigures>();
  let topology: Topology | undefined;
  for (const [i, mode] of DATABASES.entries()) {
    log(`timings (services connected to Postgres ${DATABASE_MODE_TEXT[mode]}):`);
    if (mode === "pgbouncer" && !bouncer) {
      bouncer = await startPgBouncer({ poolMode: "transaction", defaultPoolSize: PGBOUNCER_POOL });
      const started = bouncer;
      cleanups.push(() => started.close());
    }
    // The services of the way before are stopped; the last ones stay for the minimal bot's turn.
    await topology?.stop();
    topology = startTopology({ mode });
    // Each way's chats are new to it: its first contact is one.
    const figures = await timings(topology, chatsFrom(FIRST_CHAT + i * 100_000, CHATS), chatsFrom(PREWARM_CHAT + i * 100_000, 50));
    timed.set(mode, figures);

    figures.api = await apiAgainstBare(topology);
  }
  const baseline = timed.get(DATABASES[0]!)!;
  const { firstContact, bursts, pacedRuns } = baseline;
  const api = baseline.api!;

  /**
   * Where a paced message's time went, hop by hop, from the ledger's own timestamps (each a
   * transaction's start, on this machine's clock) and the bench's: the webhook POST to its
   * row stored, to its lane run claimed (the wake job and the claim), to the reply's delivery
   * committed (the context read, the LLM call), to its sendMessage at the fake Telegram (the
   * delivery job, its claim, the send). Nahida's only: the minimal bot has none of these rows.
   */
  async function hopTimes(topology: Topology, markers: readonly number[]): Promise<HopTimes[]> {
    const { rows } = await topology.db.pool.query<{ marker: number; stored: string; claimed: string; committed: string }>(
      `SELECT substring(i.message->'message'->>'text' from 'zq([0-9]+)')::int AS marker,
              extract(epoch from i.received_at) * 1000 AS stored, extract(epoch from r.started_at) * 1000 AS claimed,
              extract(epoch from min(d.created_at)) * 1000 AS committed
         FROM inbound_messages i
         JOIN lane_items li ON li.kind = 'inbound' AND li.ref_id = i.id::text
         JOIN lane_runs r ON r.id = li.run_id
         JOIN deliveries d ON d.run_id = r.id
        WHERE substring(i.message->'message'->>'text' from 'zq([0-9]+)')::int = ANY($1::int[])
        GROUP BY 1, 2, 3`,
      [markers],
    );
    if (rows.length !== markers.length) log(`warning: hop times found for ${rows.length} of ${markers.length} messages`);
    return rows.map((r) => {
      const posted = tracker.postedAt(r.marker)!;
      const [stored, claimed, committed] = [Number(r.stored), Number(r.claimed), Number(r.committed)];
      return { stored: stored - posted, claimed: claimed - stored, committed: committed - claimed, sent: tracker.answered(r.marker)! - committed };
    });
  }

  /**
   * First contact, a burst per K and the paced rates, on one set of services. Every K is
   * measured on warm processes: the services start at the largest K, warm up together and
   * scale down from there, since a process started for a K would be measured cold (a fresh
   * delivery process's first 2,000 jobs cost it about twice the CPU per job of its next
   * ones, V8 still compiling; the minimal bot, with less code, warms sooner).
   */
  async function timings(topology: Topology, benchChats: number[], prewarmChats: number[]): Promise<TimedFigures> {
    await topology.start(K_STEPS[0] ?? 1);
    // Unmeasured: connections, JIT and Prisma's caches in the first processes.
    await burst(100, prewarmChats);
    const firstContact = await measure(topology, CHATS, () => burst(CHATS, benchChats));
    log(`  first contact: ${CHATS} new chats, one message each, K=${K_STEPS[0] ?? 1}: CPU ${fmt(totalCpuPerMessage(firstContact), 1)} ms/msg, ${jobsPerMessage(firstContact)} jobs/msg`);
    if (START_WARMUP > 0) await burst(START_WARMUP, benchChats);

    const measured = new Map<number, BurstFigures>();
    const pacedRuns = new Map<number, PacedFigures>();
    for (const k of K_STEPS) {
      await topology.scaleTo(k);
      if (KS.includes(k)) {
        if (WARMUP > 0) await burst(WARMUP, benchChats);
        const m = await measure(topology, MESSAGES, () => burst(MESSAGES, benchChats));
        measured.set(k, m);
        log(
          `  burst K=${k}: ${MESSAGES} messages in ${(m.result.elapsedMs / 1000).toFixed(1)} s (posted in ${(m.result.postedMs / 1000).toFixed(1)} s): ` +
            `${throughput(m)} msgs/s, CPU ${fmt(totalCpuPerMessage(m), 1)} ms/msg, ${jobsPerMessage(m)} jobs/msg`,
        );
      }
      if (k !== PACED_K || PACED_RATES.length === 0) continue;
      if (WARMUP > 0) await burst(WARMUP, benchChats);
      for (const rate of PACED_RATES) {
        const count = Math.max(1, Math.round(rate * PACED_SECONDS));
        const m = await measure(topology, count, () => paced(rate, PACED_SECONDS, benchChats));
        pacedRuns.set(rate, m);
        const hops = topology.system === "nahida" ? await hopTimes(topology, m.result.markers) : undefined;
        log(
          `  paced ${rate}/s K=${PACED_K}: ${count} messages, p50 ${percentile(m.result.latencies, 50)} ms, p99 ${percentile(m.result.latencies, 99)} ms, ` +
            `max ${m.result.latencies.at(-1)} ms, CPU ${fmt(totalCpuPerMessage(m), 1)} ms/msg, ${jobsPerMessage(m)} jobs/msg`,
        );
        if (hops) log(`    ${hopSummary(hops)}`);
      }
    }
    // Printed in the order of --ks, the first K the others' baseline.
    const bursts = new Map(KS.filter((k) => measured.has(k)).map((k) => [k, measured.get(k)!] as const));
    return { firstContact, bursts, pacedRuns, benchChats };
  }

  /**
   * Empty ledger against full, in turns: a second database gets the prefill, and each round
   * starts services on the empty one, then on the full one (there also a janitor), so what
   * the machine does over the run (checkpoints, other load, drift) falls on both sides alike;
   * the figures are medians and percentiles of every round's messages together.
   */
  async function onFullLedger(): Promise<LedgerFigures> {
    const mode = DATABASES[0]!;
    const fullDb = await openBenchDatabase("full", mainDb.inbound, ["lanes", "outbound"], (url) => migrate({ databaseUrl: url.toString() }));

    log(`ledger: ${PREFILL} rows, ${PREFILL_AGE_DAYS} days old and older, in a second database; ${LEDGER_ROUNDS} rounds of empty, then full:`);
    const filled = await prefillLedger(fullDb.pool, { rows: PREFILL, ageDays: PREFILL_AGE_DAYS, log });
    log(`  prefilled ${filled.rows} rows in ${(filled.ms / 1000).toFixed(0)} s: ${(filled.bytes / 2 ** 30).toFixed(2)} GiB with indexes`);
    // The kernel is still writing the prefill out (seen: the first side measured after it had
    // the machine 79 % busy at a pace that takes 35 %): flush it and wait for a quiet machine.
    const s0 = Date.now();
    execFileSync("sync");
    for (;;) {
      const busy0 = machineBusyMs();
      await delay(2_000);
      const busy = (machineBusyMs() - busy0) / (2_000 * availableParallelism());
      if (busy < 0.1) break;
      if (Date.now() - s0 > 180_000) {
        log(`    the machine is still ${fmt(100 * busy, 0)} % busy 3 minutes after the prefill; measuring anyway`);
        break;
      }
    }
    log(`  synced and quiet after ${((Date.now() - s0) / 1000).toFixed(0)} s`);
    // The prefill ends with VACUUM (ANALYZE); the empty side gets the same, or its statistics
    // are whatever autovacuum left after the earlier phases (seen: round 1's empty burst
    // slower than the full one, twice).
    await direct.query(`VACUUM (ANALYZE) ${LEDGER_TABLES.join(", ")}`);

    /** Waits (a minute at most) until no autovacuum works on either database: each phase starts as quiet as the last. */
    const quiesce = async () => {
      const t0 = Date.now();
      for (;;) {
        const { rows } = await maintenance.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' AND datname = ANY($1)",
          [[databaseName, fullDb.name]],
        );
        if (rows[0]!.n === 0) break;
        if (Date.now() - t0 > 60_000) {
          log("    autovacuum still running after 60 s; measuring anyway");
          return;
        }
        await delay(250);
      }
      if (Date.now() - t0 > 1_000) log(`    waited ${((Date.now() - t0) / 1000).toFixed(1)} s for autovacuum`);
    };

    const k = KS[0] ?? 1;
    const rate = PACED_RATES[0] ?? 50;
    const count = Math.max(1, Math.round(rate * PACED_SECONDS));
    const chats = chatsFrom(LEDGER_CHAT, CHATS);
    const sides = [
      { name: "empty", db: mainDb, bursts: [] as BurstFigures[], paced: [] as PacedFigures[] },
      { name: "full", db: fullDb, bursts: [] as BurstFigures[], paced: [] as PacedFigures[] },
    ];
    const prunes: PacedFigures[] = [];
    let prunedRows = 0;
    let pruneMs = 0;
    // Odd rounds run empty, then full; even rounds the other way round, and on the full side
    // the paced phases without and with a prune swap too: what comes first (the second set of
    // processes still warming, a checkpoint due) falls on each side as often.
    for (let round = 1; round <= LEDGER_ROUNDS; round++) {
      const odd = round % 2 === 1;
      for (const side of odd ? sides : [...sides].reverse()) {
        const topology = startTopology({ mode, db: side.db });
        await topology.start(k);
        // Unmeasured: the new processes' first statements and, on the first round, every chat's first contact.
        const warm = round === 1 ? Math.max(CHATS, WARMUP) : WARMUP;
        if (warm > 0) await burst(warm, chats);
        await quiesce();
        const b = await measure(topology, MESSAGES, () => burst(MESSAGES, chats));
        side.bursts.push(b);
        log(`  round ${round}, ${side.name}: burst K=${k} ${throughput(b)} msgs/s, Postgres CPU ${fmt(postgresPerMessage(b), 2)} ms/msg`);
        await topology.scaleTo(PACED_K);
        if (WARMUP > 0) await burst(WARMUP, chats);
        const pacedPhases = side.db !== fullDb ? ["plain"] : odd ? ["plain", "prune"] : ["prune", "plain"];
        for (const phase of pacedPhases) {
          await quiesce();
          const pace = () => measure(topology, count, () => paced(rate, PACED_SECONDS, chats));
          let p: PacedFigures;
          let during = "";
          if (phase === "plain") {
            p = await pace();
            side.paced.push(p);
          } else {
            const prune = await whilePruning(topology, pace);
            p = prune.phase;
            prunes.push(p);
            prunedRows += prune.rows;
            pruneMs += prune.ms;
            during = ` while the janitor prunes (${fmt(prune.rows / (prune.ms / 1000), 0)} rows/s)`;
          }
          log(
            `  round ${round}, ${side.name}: paced ${rate}/s K=${PACED_K}${during}: p50 ${percentile(p.result.latencies, 50)} ms, ` +
              `p99 ${percentile(p.result.latencies, 99)} ms, machine ${fmt(100 * machineBusy(p), 0)} % busy`,
          );
        }
        await topology.stop();
      }
    }
    const [empty, full] = sides as [(typeof sides)[0], (typeof sides)[0]];
    return { filled, k, rate, emptyBursts: empty.bursts, fullBursts: full.bursts, emptyPaced: empty.paced, fullPaced: full.paced, prunePaced: prunes, prunedPerSecond: prunedRows / (pruneMs / 1000) };

    /** Runs `phase` while a scheduler's janitor prunes the full ledger (everything prefilled is past the default retentions). */
    async function whilePruning(topology: Topology, phase: () => Promise<PacedFigures>) {
      const schedulerUrl = new URL(topology.db.url);
      schedulerUrl.searchParams.set("application_name", `${APPLICATION_PREFIX}janitor`);
      const healthPort = await freePort();
      const scheduler = await startServiceProcess(
        "services/launcher/src/main.ts",
        { ...baseEnv, NAHIDA_QUEUE_PREFIX: topology.db.prefix, NAHIDA_SERVICES: "scheduler", DATABASE_URL: schedulerUrl.toString(), NAHIDA_HEALTH_PORT: String(healthPort) },
        { readyText: "nahida started", timeoutMs: 120_000 },
      );
      running.add(scheduler);
      try {
        /**
         * From the janitor's own metrics (a count(*) of the tables would load Postgres): the rows
         * it pruned so far, and whether a pass has ended (with a small --prefill, a later
         * round's janitor may find nothing left).
         */
        const janitor = async () => {
          const text = await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
          const rows = [...text.matchAll(/^nahida_janitor_pruned_rows_total\{[^}]*\} (\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
          return { rows, passEnded: /^nahida_janitor_last_pass_timestamp_seconds [1-9]/m.test(text) };
        };
        const pruned = async () => (await janitor()).rows;
        // Measured once it is pruning, not while it waits for its lease.
        await waitFor(async () => {
          const j = await janitor();
          return j.rows > 0 || j.passEnded || undefined;
        }, 120_000, "the janitor to start pruning", 250);
        if ((await pruned()) === 0) log("    the janitor found nothing left to prune (a small --prefill): this phase measures no prune");
        const pruned0 = await pruned();
        const t0 = Date.now();
        const figures = await phase();
        return { phase: figures, rows: (await pruned()) - pruned0, ms: Date.now() - t0 };
      } finally {
        await scheduler.stop();
        running.delete(scheduler);
      }
    }
  }

  // ------------------------------------------------------------ the minimal bot: the same traffic through its own processes
  let minimal: TimedFigures | undefined;
  if (MINIMAL) {
    log("timings of the minimal bot (webhook, worker and sender processes; no gateway):");
    // Nahida's last services are done: the bare route's deliveries were drained.
    await topology?.stop();
    topology = undefined;
    const minimalTopology = startTopology({ system: "minimal", db: await minimalDb() });
    minimal = await timings(minimalTopology, chatsFrom(MINIMAL_CHAT, CHATS), chatsFrom(MINIMAL_CHAT + 90_000, 50));
    await minimalTopology.stop();
  }

  // Last: it stops the services above and takes turns between two databases.
  let ledger: LedgerFigures | undefined;
  if (PREFILL > 0) {
    await topology?.stop();
    ledger = await onFullLedger();
  }

  printSummary({ rawBurst, rawPaced, counted, firstContact, bursts, pacedRuns, api });
  if (minimal) printAgainstMinimal(baseline, minimal, counted, api);
  if (timed.size > 1) printDatabaseModes(timed);
  if (ledger) {
    printLedger(ledger);
    printStatementTimes(pooled(ledger.emptyBursts), pooled(ledger.fullBursts));
  }

  /**
   * POST /api/send against the bare route, in turns: API_ROUNDS rounds of each, which goes
   * first alternating, after unmeasured requests to each (twice a round's: a first round of
   * 4,000 cost the gateway 1.5 to 1.7 times the CPU per request of the rounds after it, more
   * code to compile than the bare route's). Measured one after the other, either route's
   * figure drifted by a third between runs of the same code (the bare route alone: 1,014 to
   * 2,427 req/s), which the ratio took in whole. Sends wait during each round (routeOnly);
   * Nahida's CPU is read after its settle, by when resumed sends would have counted.
   */
  async function apiAgainstBare(topology: Topology): Promise<ApiFigures> {
    const routes = { nahida: { url: sendUrl, headers: auth, tag: "api" }, bare: { url: bareUrl, headers: {}, tag: "bare" } };
    for (const { url, headers } of Object.values(routes)) {
      await apiLoad(url, headers, 2 * API_REQUESTS, "warm-up");
      await drainDeliveries();
    }
    // Both routes through measure, for its sampler's load on the bench process (which sends
    // the requests) to weigh on both alike; for the bare route its figures are unused but the
    // bare process's CPU, read around it.
    const time = async ({ url, headers, tag }: (typeof routes)[keyof typeof routes]) => {
      const cpu0 = bareCpu();
      const phase = await routeOnly(() => measure(topology, API_REQUESTS, () => apiLoad(url, headers, API_REQUESTS, tag), false));
      const cpu1 = bareCpu();
      await drainDeliveries();
      return { phase, bareCpuMs: cpu0 !== undefined && cpu1 !== undefined ? cpu1 - cpu0 : undefined };
    };
    const rounds: ApiRound[] = [];
    for (let r = 0; r < API_ROUNDS; r++) {
      const nahidaFirst = r % 2 === 0;
      const first = await time(nahidaFirst ? routes.nahida : routes.bare);
      const second = await time(nahidaFirst ? routes.bare : routes.nahida);
      const [nahida, bare] = nahidaFirst ? [first, second] : [second, first];
      const bareSide = { ...bare.phase.result, cpuMs: bare.bareCpuMs };
      const round = { nahida: nahida.phase, bare: bareSide, ratio: nahida.phase.result.requestsPerSecond / bareSide.requestsPerSecond };
      rounds.push(round);
      const bareCpuText = round.bare.cpuMs === undefined ? "" : `, its CPU ${fmt(round.bare.cpuMs / API_REQUESTS, 2)} ms/request`;
      log(
        `  POST /api/send round ${r + 1}: ${describeLoad(round.nahida.result)}, gateway CPU ${fmt((round.nahida.cpuMs.get("gateway") ?? 0) / API_REQUESTS, 2)} ms/request; ` +
          `bare (${args["bare-in-bench"] ? "in the bench process" : "own process"}): ${describeLoad(round.bare)}${bareCpuText}; ratio ${fmt(round.ratio, 2)}`,
      );
    }
    const median = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor((rounds.length - 1) / 2)]!;
    return { ...median.nahida, bare: median.bare, ratio: median.ratio, ratios: rounds.map((r) => r.ratio) };
  }

  async function startBareProcess() {
    const proc = await startServiceProcess(
      "bench/support/bare-send.process.ts",
      { DATABASE_URL: directUrl.toString(), REDIS_URL: TEST_REDIS_URL, NAHIDA_QUEUE_PREFIX: prefix },
      { readyText: "ready ", timeoutMs: 60_000 },
    );
    running.add(proc);
    const address = /ready (\S+)/.exec(proc.tail())![1]!;
    return { address, pid: proc.pid, close: () => proc.stop() };
  }
}

// ---------------------------------------------------------------- figures
interface PhaseFigures {
  messages: number;
  wallMs: number;
  /** Per class (service classes, postgres, bench, proxy), ms over the phase. */
  cpuMs: Map<string, number>;
  /** Postgres backend CPU by the class that connected (its application_name); "other" for the bench's own. */
  postgresByClass: Map<string, number>;
  redisCpuMs: number;
  /** What the machine's cores did besides all of the above (kernel, Postgres' own processes, anyone else). */
  othersCpuMs: number;
  statements: Map<string, StatementCounts> | undefined;
  jobs: QueueAddCounts;
  /** WAL the server wrote during the phase (every database's): bytes, full-page images, records. */
  wal: { bytes: number; fpi: number; records: number };
  /** Per statement text (pg_stat_statements; empty where it is not loaded): what the phase ran. */
  statementTime: Map<string, StatementTime>;
  /**
   * Commands the Redis server ran during the phase, by name: every client's (the bench's own
   * event listeners' XREADs among them), those Lua scripts call included.
   */
  redisCommands: Map<string, number>;
  /** Chat completions the fake LLM answered: one per run of the agent loop (a run may answer several messages). */
  llmCalls: number;
}

/** A database and queue prefix one set of services runs on, with what reads their counters. */
interface BenchDatabase {
  name: string;
  url: URL;
  pool: pg.Pool;
  prefix: string;
  jobs: Awaited<ReturnType<typeof startQueueAddCounter>>;
  /** The job the ingress adds (or has absorbed by a deduplication id) for every message it stores. */
  inbound: { queue: string; job: string };
}

interface StatementTime {
  calls: number;
  /** Execution time, ms. */
  ms: number;
  /** Shared buffer pages touched (hit or read). */
  pages: number;
  dirtied: number;
}

/** Adds `t` to what `times` holds for `query`: one statement text's rows of pg_stat_statements, or several phases. */
function addStatementTime(times: Map<string, StatementTime>, query: string, t: StatementTime): void {
  const prior = times.get(query) ?? { calls: 0, ms: 0, pages: 0, dirtied: 0 };
  times.set(query, { calls: prior.calls + t.calls, ms: prior.ms + t.ms, pages: prior.pages + t.pages, dirtied: prior.dirtied + t.dirtied });
}

function diffStatementTimes(before: Map<string, StatementTime>, after: Map<string, StatementTime>): Map<string, StatementTime> {
  const diff = new Map<string, StatementTime>();
  for (const [query, a] of after) {
    const b = before.get(query) ?? { calls: 0, ms: 0, pages: 0, dirtied: 0 };
    if (a.calls > b.calls) diff.set(query, { calls: a.calls - b.calls, ms: a.ms - b.ms, pages: a.pages - b.pages, dirtied: a.dirtied - b.dirtied });
  }
  return diff;
}

/** The statements of the hot path, empty against full ledger, per message: the most grown first. */
function printStatementTimes(empty: PhaseFigures, full: PhaseFigures): void {
  if (empty.statementTime.size === 0) return;
  const per = (m: PhaseFigures, q: string) => m.statementTime.get(q) ?? { calls: 0, ms: 0, pages: 0, dirtied: 0 };
  const total = (m: PhaseFigures) => [...m.statementTime.values()].reduce((sum, t) => sum + t.ms, 0) / m.messages;
  log("");
  log(`statement execution time per message (pg_stat_statements), burst, empty against full: ${fmt(total(empty), 2)} against ${fmt(total(full), 2)} ms`);
  log(`| statement | calls/msg | ms/msg empty | ms/msg full | pages/call empty | pages/call full |`);
  log(`|---|---|---|---|---|---|`);
  const queries = new Set([...empty.statementTime.keys(), ...full.statementTime.keys()]);
  const rows = [...queries].map((q) => ({ q, e: per(empty, q), f: per(full, q) })).sort((a, b) => b.f.ms / full.messages - b.e.ms / empty.messages - (a.f.ms / full.messages - a.e.ms / empty.messages));
  for (const { q, e, f } of rows.slice(0, TOP)) {
    const pagesPerCall = (t: StatementTime) => (t.calls === 0 ? "-" : fmt(t.pages / t.calls, 1));
    log(`| ${shortSql(q.replace(/\s+/g, " "))} | ${fmt(f.calls / full.messages, 2)} | ${fmt(e.ms / empty.messages, 3)} | ${fmt(f.ms / full.messages, 3)} | ${pagesPerCall(e)} | ${pagesPerCall(f)} |`);
  }
}

type BurstFigures = PhaseFigures & { result: { elapsedMs: number; postedMs: number } };
type PacedFigures = PhaseFigures & { result: { latencies: number[] } };
/** A paced message's time per hop, ms: see hopTimes. */
interface HopTimes {
  /** Webhook POST → its row stored (the ingress's statement began). */
  stored: number;
  /** → its lane run claimed: the wake job, its pickup, the claim. */
  claimed: number;
  /** → the reply's delivery committed: the context read, the LLM call, the fenced commit began. */
  committed: number;
  /** → its sendMessage at the fake Telegram: the delivery job, its claim, the send. */
  sent: number;
}
const HOPS = ["stored", "claimed", "committed", "sent"] as const;

/**
 * Each hop's p50 and p99, and its mean over the slowest 1 % of messages end to end: whether
 * the tail is one hop's or every hop's at once (a shared stall, or the cores busy).
 */
function hopSummary(hops: readonly HopTimes[]): string {
  const total = (h: HopTimes) => HOPS.reduce((sum, hop) => sum + h[hop], 0);
  const slowest = [...hops].sort((a, b) => total(b) - total(a)).slice(0, Math.max(1, Math.round(hops.length / 100)));
  const cells = HOPS.map((hop) => {
    const sorted = hops.map((h) => h[hop]).sort((a, b) => a - b);
    const tail = slowest.reduce((sum, h) => sum + h[hop], 0) / slowest.length;
    return `${hop} ${fmt(percentile(sorted, 50), 0)} / ${fmt(percentile(sorted, 99), 0)} / ${fmt(tail, 0)}`;
  });
  return `by hop, ms (p50 / p99 / mean of the slowest ${slowest.length}): ${cells.join(", ")}`;
}

/** One round of POST /api/send and one of the bare route, taken in turns. */
interface ApiRound {
  nahida: PhaseFigures & { result: LoadResult };
  /** With the bare process's CPU over its round (undefined when it ran in the bench process). */
  bare: LoadResult & { cpuMs: number | undefined };
  ratio: number;
}
/** The median round's POST /api/send figures, with its bare round, its ratio and every round's. */
type ApiFigures = ApiRound["nahida"] & Pick<ApiRound, "bare" | "ratio"> & { ratios: number[] };
/** `0.84 × (median of 5 rounds, 0.70 to 0.88)`. */
const apiRatioText = (api: ApiFigures) => {
  if (api.ratios.length === 1) return `${fmt(api.ratio, 2)} ×`;
  return `${fmt(api.ratio, 2)} × (median of ${api.ratios.length} rounds, ${fmt(Math.min(...api.ratios), 2)} to ${fmt(Math.max(...api.ratios), 2)})`;
};
/** One way of reaching Postgres: its timings, on chats of its own. */
interface TimedFigures {
  firstContact: PhaseFigures;
  bursts: Map<number, BurstFigures>;
  pacedRuns: Map<number, PacedFigures>;
  api?: ApiFigures;
  benchChats: number[];
}
interface CountedFigures {
  firstContact: PhaseFigures;
  steady: PhaseFigures;
  batched: PhaseFigures;
  /** Bursts of two messages per chat, per K (K = 1 is `batched`). */
  bursts: Map<number, PhaseFigures>;
  api: PhaseFigures;
  /** The minimal bot's bursts per K, counted the same way. */
  minimal?: Map<number, PhaseFigures>;
}

/** One phase per round and side, in the order they ran. */
interface LedgerFigures {
  filled: { rows: number; ms: number; bytes: number };
  k: number;
  rate: number;
  emptyBursts: BurstFigures[];
  fullBursts: BurstFigures[];
  emptyPaced: PacedFigures[];
  fullPaced: PacedFigures[];
  prunePaced: PacedFigures[];
  prunedPerSecond: number;
}

/** Phases as one: every counter summed (the results are left out). */
function pooled(phases: readonly PhaseFigures[]): PhaseFigures {
  const sumMaps = (maps: Map<string, number>[]) => {
    const sum = new Map<string, number>();
    for (const map of maps) for (const [key, n] of map) sum.set(key, (sum.get(key) ?? 0) + n);
    return sum;
  };
  const add = (f: (m: PhaseFigures) => number) => phases.reduce((sum, m) => sum + f(m), 0);
  const statementTime = new Map<string, StatementTime>();
  for (const m of phases) for (const [query, t] of m.statementTime) addStatementTime(statementTime, query, t);
  return {
    messages: add((m) => m.messages),
    wallMs: add((m) => m.wallMs),
    cpuMs: sumMaps(phases.map((m) => m.cpuMs)),
    postgresByClass: sumMaps(phases.map((m) => m.postgresByClass)),
    redisCpuMs: add((m) => m.redisCpuMs),
    othersCpuMs: add((m) => m.othersCpuMs),
    statements: undefined,
    jobs: { added: sumMaps(phases.map((m) => m.jobs.added)), notCreated: sumMaps(phases.map((m) => m.jobs.notCreated)), moved: sumMaps(phases.map((m) => m.jobs.moved)) },
    wal: { bytes: add((m) => m.wal.bytes), fpi: add((m) => m.wal.fpi), records: add((m) => m.wal.records) },
    statementTime,
    redisCommands: sumMaps(phases.map((m) => m.redisCommands)),
    llmCalls: add((m) => m.llmCalls),
  };
}

/** The share of the machine's cores that were busy during a phase, by anyone. */
function machineBusy(m: PhaseFigures): number {
  const busyMs = [...m.cpuMs.values()].reduce((a, b) => a + b, 0) + m.redisCpuMs + m.othersCpuMs;
  return busyMs / (m.wallMs * availableParallelism());
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Nahida against the minimal bot, same run, per K: throughput, CPU per message by process class
 * and its rise from K = 1, paced latency, and (from the counted run) statements, queue jobs and
 * Redis commands per message; then issue 26's targets, each met or not.
 */
function printAgainstMinimal(nahida: TimedFigures, minimal: TimedFigures, counted: CountedFigures | undefined, api: ApiFigures): void {
  const classes = ["ingress", "agent-worker", "delivery", "postgres"] as const;
  // Postgres: the services' own backends only (not autovacuum's or the bench's).
  const per = (m: PhaseFigures, cls: string) => (cls === "postgres" ? postgresPerMessage(m) : (m.cpuMs.get(cls) ?? 0) / m.messages);
  const rate = messagesPerSecond;
  const x = (a: number, b: number) => (b > 0 ? `${fmt(a / b, 2)} ×` : "n/a");
  const rise = (now: number, atOne: number) => `${now >= atOne ? "+" : ""}${fmt((100 * (now - atOne)) / atOne, 0)} %`;
  const [k1] = [...nahida.bursts.keys()];
  const rows: string[][] = [];
  for (const [k, n] of nahida.bursts) {
    const m = minimal.bursts.get(k)!;
    const n1 = nahida.bursts.get(k1!)!;
    const m1 = minimal.bursts.get(k1!)!;
    const scale = k === k1 ? "" : ` (${x(rate(n), rate(n1))} / ${x(rate(m), rate(m1))} of K=${k1})`;
    rows.push([`burst K=${k}, msgs/s`, fmt(rate(n), 0), fmt(rate(m), 0), `${x(rate(n), rate(m))}${scale}`]);
    rows.push([`  messages per LLM call`, fmt(n.messages / n.llmCalls, 2), fmt(m.messages / m.llmCalls, 2), ""]);
    for (const cls of classes) {
      const grew = k === k1 ? "" : `; from K=${k1}: ${rise(per(n, cls), per(n1, cls))} / ${rise(per(m, cls), per(m1, cls))}`;
      rows.push([`  CPU/msg ${cls}`, `${fmt(per(n, cls), 2)} ms`, `${fmt(per(m, cls), 2)} ms`, `${x(per(n, cls), per(m, cls))}${grew}`]);
    }
    const grew = k === k1 ? "" : `; from K=${k1}: ${rise(serviceCpuPerMessage(n), serviceCpuPerMessage(n1))} / ${rise(serviceCpuPerMessage(m), serviceCpuPerMessage(m1))}`;
    rows.push([`  CPU/msg, all services and Postgres`, `${fmt(serviceCpuPerMessage(n), 2)} ms`, `${fmt(serviceCpuPerMessage(m), 2)} ms`, `${x(serviceCpuPerMessage(n), serviceCpuPerMessage(m))}${grew}`]);
    rows.push([`  CPU/msg Redis`, `${fmt(n.redisCpuMs / n.messages, 2)} ms`, `${fmt(m.redisCpuMs / m.messages, 2)} ms`, x(n.redisCpuMs / n.messages, m.redisCpuMs / m.messages)]);
    // The same work counted per answer: a K whose runs batch fewer messages answers more
    // often, so its CPU per message rises without any step getting dearer.
    const callGrew = k === k1 ? "" : `; from K=${k1}: ${rise(cpuPerLlmCall(n), cpuPerLlmCall(n1))} / ${rise(cpuPerLlmCall(m), cpuPerLlmCall(m1))}`;
    rows.push([`  CPU per LLM call, all services and Postgres`, `${fmt(cpuPerLlmCall(n), 2)} ms`, `${fmt(cpuPerLlmCall(m), 2)} ms`, `${x(cpuPerLlmCall(n), cpuPerLlmCall(m))}${callGrew}`]);
    const sendGrew = k === k1 ? "" : `; from K=${k1}: ${rise(cpuPerSend(n), cpuPerSend(n1))} / ${rise(cpuPerSend(m), cpuPerSend(m1))}`;
    rows.push([`  CPU per delivery job, delivery`, `${fmt(cpuPerSend(n), 2)} ms`, `${fmt(cpuPerSend(m), 2)} ms`, `${x(cpuPerSend(n), cpuPerSend(m))}${sendGrew}`]);
  }
  for (const [r, n] of nahida.pacedRuns) {
    const m = minimal.pacedRuns.get(r)!;
    const p = (f: PacedFigures, q: number) => percentile(f.result.latencies, q);
    rows.push([`paced ${r}/s K=${PACED_K}, p50 / p99`, `${p(n, 50)} / ${p(n, 99)} ms`, `${p(m, 50)} / ${p(m, 99)} ms`, `${x(p(n, 50), p(m, 50))} / ${x(p(n, 99), p(m, 99))}`]);
    rows.push([`  CPU/msg, all`, `${fmt(serviceCpuPerMessage(n), 2)} ms`, `${fmt(serviceCpuPerMessage(m), 2)} ms`, x(serviceCpuPerMessage(n), serviceCpuPerMessage(m))]);
    for (const cls of classes) rows.push([`  CPU/msg ${cls}`, `${fmt(per(n, cls), 2)} ms`, `${fmt(per(m, cls), 2)} ms`, x(per(n, cls), per(m, cls))]);
  }
  if (counted?.minimal) {
    for (const [k, n] of counted.bursts) {
      const m = counted.minimal.get(k);
      if (!m) continue;
      const n1 = counted.bursts.get(1)!;
      rows.push([`counted burst K=${k}: statements/msg`, `${fmt(statementsOf(n) / n.messages, 2)}${k === 1 ? "" : ` (${x(statementsOf(n) / n.messages, statementsOf(n1) / n1.messages)} of K=1)`}`, fmt(statementsOf(m) / m.messages, 2), ""]);
      rows.push([`  statements per LLM call`, `${fmt(statementsPerLlmCall(n), 2)}${k === 1 ? "" : ` (${x(statementsPerLlmCall(n), statementsPerLlmCall(n1))} of K=1)`}`, fmt(statementsPerLlmCall(m), 2), ""]);
      rows.push([`  queue jobs/msg; went back`, `${jobsPerMessage(n)}; ${movesPerMessage(n)}`, `${jobsPerMessage(m)}; ${movesPerMessage(m)}`, ""]);
      rows.push([`  Redis commands/msg`, fmt(redisCommandsPerMessage(n), 1), fmt(redisCommandsPerMessage(m), 1), x(redisCommandsPerMessage(n), redisCommandsPerMessage(m))]);
    }
  }
  log("");
  log(
    `Nahida (connected ${DATABASE_MODE_TEXT[DATABASES[0]!]}) against the minimal bot (directly; same run, same fakes and traffic; ` +
      "CPU of each class's processes and of the Postgres backends serving them; bursts batch a chat's waiting messages into one Nahida run):",
  );
  log("| figure | Nahida | minimal bot | Nahida / minimal |");
  log("|---|---|---|---|");
  for (const r of rows) log(`| ${r.join(" | ")} |`);

  // Issue 26's targets.
  const met = (ok: boolean) => (ok ? "met" : "NOT met");
  const n2 = nahida.bursts.get(2);
  const m2 = minimal.bursts.get(2);
  const n1 = nahida.bursts.get(1);
  const m1 = minimal.bursts.get(1);
  log("");
  if (n1 && n2 && m1 && m2) {
    const nr = serviceCpuPerMessage(n2) / serviceCpuPerMessage(n1);
    const mr = serviceCpuPerMessage(m2) / serviceCpuPerMessage(m1);
    log(
      `target: CPU per message, burst, K=1 → 2: Nahida ${rise(serviceCpuPerMessage(n2), serviceCpuPerMessage(n1))}, minimal bot ${rise(serviceCpuPerMessage(m2), serviceCpuPerMessage(m1))}: ${met(nr <= mr)} ` +
        `(per LLM call: Nahida ${rise(cpuPerLlmCall(n2), cpuPerLlmCall(n1))}, minimal bot ${rise(cpuPerLlmCall(m2), cpuPerLlmCall(m1))})`,
    );
  }
  if (counted) {
    const s1 = statementsOf(counted.bursts.get(1)!) / counted.bursts.get(1)!.messages;
    for (const [k, n] of counted.bursts) {
      if (k === 1) continue;
      const ratio = statementsOf(n) / n.messages / s1;
      const perCall = statementsPerLlmCall(n) / statementsPerLlmCall(counted.bursts.get(1)!);
      log(`target: statements per message at K=${k} ≤ 1.1 × K=1: ${fmt(ratio, 2)} ×: ${met(ratio <= 1.1)} (per LLM call: ${fmt(perCall, 2)} ×)`);
    }
  }
  const paced = [...nahida.pacedRuns.keys()][0];
  if (paced !== undefined) {
    const n = nahida.pacedRuns.get(paced)!;
    const m = minimal.pacedRuns.get(paced)!;
    const cpu = serviceCpuPerMessage(n) / serviceCpuPerMessage(m);
    const p99 = (f: PacedFigures) => percentile(f.result.latencies, 99);
    log(`target: paced ${paced}/s CPU per message ≤ 1.15 × the minimal bot's: ${fmt(cpu, 2)} ×: ${met(cpu <= 1.15)}`);
    log(`target: paced ${paced}/s p99 ≤ the minimal bot's: ${p99(n)} against ${p99(m)} ms: ${met(p99(n) <= p99(m))}`);
  }
  log(`target: POST /api/send ≥ 0.9 × the bare route: ${apiRatioText(api)}: ${met(api.ratio >= 0.9)}`);
}

/** CPU per message of the service processes (gateway included) and of the Postgres backends serving them. */
function serviceCpuPerMessage(m: PhaseFigures): number {
  return SERVICE_CLASSES.reduce((sum, cls) => sum + (m.cpuMs.get(cls) ?? 0), 0) / m.messages + postgresPerMessage(m);
}

/** Postgres CPU per message of the services' own backends (the janitor's excluded). */
function postgresPerMessage(m: PhaseFigures): number {
  return [...m.postgresByClass].filter(([c]) => (SERVICE_CLASSES as readonly string[]).includes(c)).reduce((sum, [, ms]) => sum + ms, 0) / m.messages;
}

/** Each way of reaching Postgres against the first (--databases). */
function printDatabaseModes(timed: Map<DatabaseMode, TimedFigures>): void {
  const [baseMode, base] = [...timed][0]!;
  const rows: string[][] = [];
  const ratio = (now: number, then: number) => (then > 0 ? `${fmt(now / then, 2)} ×` : "n/a");
  for (const [mode, t] of timed) {
    const cells = (now: number, then: number, digits = 0) => (mode === baseMode ? fmt(now, digits) : `${fmt(now, digits)} (${ratio(now, then)})`);
    for (const [k, m] of t.bursts) {
      const b = base.bursts.get(k)!;
      rows.push([mode, `burst K=${k}`, `${cells(Number(throughput(m)), Number(throughput(b)))} msgs/s`, `${cells(totalCpuPerMessage(m), totalCpuPerMessage(b), 2)} ms`, `${cells(postgresPerMessage(m), postgresPerMessage(b), 2)} ms`, fmt((m.cpuMs.get("pgbouncer") ?? 0) / m.messages, 2)]);
    }
    for (const [rate, m] of t.pacedRuns) {
      const b = base.pacedRuns.get(rate)!;
      const p = (x: PacedFigures, q: number) => percentile(x.result.latencies, q);
      rows.push([mode, `paced ${rate}/s K=${PACED_K}`, `p50 ${cells(p(m, 50), p(b, 50))} ms, p99 ${cells(p(m, 99), p(b, 99))} ms`, `${cells(totalCpuPerMessage(m), totalCpuPerMessage(b), 2)} ms`, `${cells(postgresPerMessage(m), postgresPerMessage(b), 2)} ms`, fmt((m.cpuMs.get("pgbouncer") ?? 0) / m.messages, 2)]);
    }
    if (t.api && base.api) {
      rows.push([mode, "POST /api/send", `${cells(t.api.result.requestsPerSecond, base.api.result.requestsPerSecond)} req/s, p99 ${fmt(t.api.result.p99Ms)} ms`, `${cells(totalCpuPerMessage(t.api), totalCpuPerMessage(base.api), 2)} ms`, `${cells(postgresPerMessage(t.api), postgresPerMessage(base.api), 2)} ms`, fmt((t.api.cpuMs.get("pgbouncer") ?? 0) / t.api.messages, 2)]);
    }
  }
  log("");
  log(`ways of reaching Postgres, each against ${baseMode} (same run):`);
  log("| database | phase | throughput or latency | CPU per message, all processes | Postgres CPU per message | PgBouncer CPU per message (ms) |");
  log("|---|---|---|---|---|---|");
  for (const r of rows) log(`| ${r.join(" | ")} |`);
}

function printLedger(l: LedgerFigures): void {
  const ratio = (a: number, b: number) => `${fmt(a / b, 2)} ×`;
  const rate = messagesPerSecond;
  /** Every round's latencies together: one percentile over all of a side's messages. */
  const p = (ms: readonly PacedFigures[], q: number) => percentile(ms.flatMap((m) => m.result.latencies).sort((a, b) => a - b), q);
  const perRound = (values: number[]) => `rounds: ${values.map((v) => fmt(v, 2)).join(", ")}`;
  const rounds = l.emptyBursts.length;
  const [emptyBurst, fullBurst, emptyPaced, fullPaced] = [l.emptyBursts, l.fullBursts, l.emptyPaced, l.fullPaced].map(pooled) as [PhaseFigures, PhaseFigures, PhaseFigures, PhaseFigures];
  const busy = (ms: readonly PacedFigures[]) => `${fmt(100 * median(ms.map(machineBusy)), 0)} %`;
  const wal = (m: PhaseFigures) => `${fmt(m.wal.bytes / m.messages / 1024, 1)} KiB, ${fmt(m.wal.fpi / m.messages, 1)} full pages`;
  const roundP99 = (a: PacedFigures[], b: PacedFigures[]) => perRound(a.map((m, i) => percentile(m.result.latencies, 99) / percentile(b[i]!.result.latencies, 99)));
  log("");
  log(`ledger (${l.filled.rows} rows prefilled in ${(l.filled.ms / 1000).toFixed(0)} s, ${(l.filled.bytes / 2 ** 30).toFixed(2)} GiB), empty against full, ${rounds} rounds in turns, same run:`);
  log(`| figure | empty | full | full / empty |`);
  log(`|---|---|---|---|`);
  log(
    `| burst K=${l.k}, msgs/s, median of ${rounds} | ${fmt(median(l.emptyBursts.map(rate)), 0)} | ${fmt(median(l.fullBursts.map(rate)), 0)} | ` +
      `${ratio(median(l.fullBursts.map(rate)), median(l.emptyBursts.map(rate)))} (${perRound(l.fullBursts.map((m, i) => rate(m) / rate(l.emptyBursts[i]!)))}) |`,
  );
  log(`| Postgres CPU per message (the statements' time), burst | ${fmt(postgresPerMessage(emptyBurst), 2)} ms | ${fmt(postgresPerMessage(fullBurst), 2)} ms | ${ratio(postgresPerMessage(fullBurst), postgresPerMessage(emptyBurst))} |`);
  log(`| paced ${l.rate}/s K=${PACED_K} p50 / p99, every round's messages | ${p(l.emptyPaced, 50)} / ${p(l.emptyPaced, 99)} ms | ${p(l.fullPaced, 50)} / ${p(l.fullPaced, 99)} ms | ${ratio(p(l.fullPaced, 99), p(l.emptyPaced, 99))} p99 (${roundP99(l.fullPaced, l.emptyPaced)}) |`);
  log(`| machine busy, paced (median) | ${busy(l.emptyPaced)} | ${busy(l.fullPaced)} | |`);
  log(`| Postgres CPU per message, paced | ${fmt(postgresPerMessage(emptyPaced), 2)} ms | ${fmt(postgresPerMessage(fullPaced), 2)} ms | ${ratio(postgresPerMessage(fullPaced), postgresPerMessage(emptyPaced))} |`);
  log(`| WAL per message, burst | ${wal(emptyBurst)} | ${wal(fullBurst)} | ${ratio(fullBurst.wal.bytes / fullBurst.messages, emptyBurst.wal.bytes / emptyBurst.messages)} |`);
  log(`| WAL per message, paced | ${wal(emptyPaced)} | ${wal(fullPaced)} | ${ratio(fullPaced.wal.bytes / fullPaced.messages, emptyPaced.wal.bytes / emptyPaced.messages)} |`);
  log(
    `while the janitor prunes the full ledger (${l.prunedPerSecond.toFixed(0)} rows/s, machine ${busy(l.prunePaced)} busy): paced ${l.rate}/s p50 / p99 ${p(l.prunePaced, 50)} / ${p(l.prunePaced, 99)} ms, ` +
      `p99 ${ratio(p(l.prunePaced, 99), p(l.fullPaced, 99))} the same pace on the full ledger without a prune (${roundP99(l.prunePaced, l.fullPaced)})`,
  );
}

function sumCpu(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (processCpuMs(pid) ?? 0), 0);
}

function findPids(comm: string): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((pid) => processName(pid) === comm);
}

async function startProxies() {
  const url = new URL(TEST_POSTGRES_URL);
  const child: ChildProcess = fork(`${REPO_ROOT}bench/support/pg-counting-proxy.process.ts`, [], {
    execArgv: ["--import", "tsx"],
    env: { ...process.env, PG_UPSTREAM_HOST: url.hostname, PG_UPSTREAM_PORT: url.port || "5432", PROXY_CLASSES: SERVICE_CLASSES.join(",") },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const ports = await new Promise<Record<ServiceClass, number>>((resolve, reject) => {
    child.once("message", (m: { type: string; ports: Record<ServiceClass, number> }) => resolve(m.ports));
    child.once("exit", (code) => reject(new Error(`counting proxy exited (${code})`)));
  });
  let closed: Promise<unknown> | undefined;
  const close = () => {
    if (!closed) {
      closed = new Promise((r) => child.once("exit", r));
      child.disconnect();
    }
    return closed;
  };
  cleanups.push(close);
  const snapshot = () =>
    new Promise<ProxySnapshotMessage>((resolve) => {
      const onMessage = (m: ProxySnapshotMessage) => {
        if (m.type !== "snapshot") return;
        child.off("message", onMessage);
        resolve(m);
      };
      child.on("message", onMessage);
      child.send({ type: "snapshot" });
    });
  return {
    child,
    ports,
    close,
    async counts(): Promise<Map<string, StatementCounts>> {
      const s = await snapshot();
      return new Map(Object.entries(s.counts).map(([cls, c]) => [cls, { total: c.total, bySql: new Map(c.bySql) }]));
    },
  };
}

function diffStatementMaps(before: Map<string, StatementCounts>, after: Map<string, StatementCounts>): Map<string, StatementCounts> {
  return new Map([...after].map(([cls, counts]) => [cls, diffCounts(before.get(cls) ?? { total: 0, bySql: new Map() }, counts)]));
}

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");

function messagesPerSecond(m: PhaseFigures & { result: { elapsedMs: number } }): number {
  return (m.messages * 1000) / m.result.elapsedMs;
}

function throughput(m: PhaseFigures & { result: { elapsedMs: number } }): string {
  return fmt(messagesPerSecond(m), 0);
}

function totalCpuPerMessage(m: PhaseFigures): number {
  let sum = 0;
  for (const [cls, ms] of m.cpuMs) if (cls !== "bench" && cls !== "proxy") sum += ms;
  return sum / m.messages;
}

function cpuBreakdown(m: PhaseFigures): string {
  const parts = [...m.cpuMs].map(([cls, ms]) => `${cls} ${fmt(ms / m.messages, 2)}`);
  return `${parts.join(", ")}; Redis (whole server) ${fmt(m.redisCpuMs / m.messages, 2)}`;
}

function statementsOf(m: PhaseFigures, only?: string): number {
  return [...(m.statements ?? [])].filter(([cls]) => !only || cls === only).reduce((sum, [, c]) => sum + c.total, 0);
}

function perMessage(m: PhaseFigures, only?: ServiceClass): string {
  return m.statements ? fmt(statementsOf(m, only) / m.messages) : "n/a";
}

function statementBreakdown(m: PhaseFigures): string {
  if (!m.statements) return "n/a (--no-proxy)";
  const parts = SERVICE_CLASSES.map((cls) => `${cls} ${fmt(statementsOf(m, cls) / m.messages)}`);
  return `${perMessage(m)} (${parts.join(", ")})`;
}

function jobsPerMessage(m: PhaseFigures): string {
  const total = [...m.jobs.added.values()].reduce((a, b) => a + b, 0);
  return fmt(total / m.messages, 2);
}

/** Every service's and Postgres backend's CPU per LLM call (per Nahida run, or minimal-bot message). */
function cpuPerLlmCall(m: PhaseFigures): number {
  return (serviceCpuPerMessage(m) * m.messages) / Math.max(1, m.llmCalls);
}

/** Postgres statements per LLM call (per Nahida run, or minimal-bot message). */
function statementsPerLlmCall(m: PhaseFigures): number {
  return statementsOf(m) / Math.max(1, m.llmCalls);
}

/** The delivery (sender) processes' CPU per send job added in the phase. */
function cpuPerSend(m: PhaseFigures): number {
  const sends = [...m.jobs.added].filter(([name]) => name === "outbound/delivery.send" || name.startsWith(`${MINIMAL_QUEUES.outbound}/`)).reduce((a, [, n]) => a + n, 0);
  return (m.cpuMs.get("delivery") ?? 0) / Math.max(1, sends);
}

/** Redis commands per message, the bench's own event listeners' XREADs left out. */
function redisCommandsPerMessage(m: PhaseFigures): number {
  return [...m.redisCommands].filter(([c]) => c !== "xread").reduce((sum, [, n]) => sum + n, 0) / m.messages;
}

/** Jobs that went back per message (delayed, retried, failed, stalled), or "none". */
function movesPerMessage(m: PhaseFigures): string {
  const parts = [...m.jobs.moved].sort(([a], [b]) => a.localeCompare(b)).map(([how, n]) => `${how} ${fmt(n / m.messages, 3)}`);
  return parts.length ? parts.join(", ") : "none";
}

function jobBreakdown(m: PhaseFigures): string {
  const parts = [...m.jobs.added].sort(([a], [b]) => a.localeCompare(b)).map(([name, n]) => `${name} ${fmt(n / m.messages, 2)}`);
  const refused = [...m.jobs.notCreated].map(([name, n]) => `${name} ${fmt(n / m.messages, 2)}`);
  return `${jobsPerMessage(m)} (${parts.join(", ")})${refused.length ? `; adds that created no job: ${refused.join(", ")}` : ""}`;
}

function cpuSummary(m: PhaseFigures): string {
  const per = (ms: number) => fmt(ms / m.messages, 2);
  const services = ["ingress", "agent-worker", "delivery", "gateway", "postgres"].map((cls) => `${cls === "agent-worker" ? "agent" : cls} ${per(m.cpuMs.get(cls) ?? 0)}`);
  return `${fmt(totalCpuPerMessage(m), 2)} ms (${services.join(", ")}; not in the sum: bench ${per(m.cpuMs.get("bench") ?? 0)}, Redis ${per(m.redisCpuMs)}, rest of the machine ${per(m.othersCpuMs)})`;
}

function describeLoad(r: LoadResult): string {
  const bad = [...r.unexpected].map(([status, n]) => `${n}× ${status || "error"}`);
  return `${r.requests} requests, ${fmt(r.requestsPerSecond, 0)} req/s, p50 ${fmt(r.p50Ms)} ms, p99 ${fmt(r.p99Ms)} ms${bad.length ? `, unexpected: ${bad.join(", ")}` : ""}`;
}

function printSummary(o: {
  rawBurst: RawBurstResult;
  rawPaced: Map<number, RawPacedResult>;
  counted: CountedFigures | undefined;
  firstContact: PhaseFigures;
  bursts: Map<number, BurstFigures>;
  pacedRuns: Map<number, PacedFigures>;
  api: ApiFigures;
}): void {
  const rows: [string, string, string][] = [];
  const rawJobs = o.rawBurst.jobsPerSecond;
  const rawCpu = `raw two-hop ${fmt(o.rawBurst.cpuMsPerJob, 2)} ms/job`;
  for (const [k, m] of o.bursts) {
    const tp = (m.messages * 1000) / m.result.elapsedMs;
    rows.push([`burst throughput, K=${k}`, `${fmt(tp, 0)} msgs/s`, `raw BullMQ two-hop ${fmt(rawJobs, 0)} jobs/s; ratio ${fmt(tp / rawJobs, 3)}`]);
  }
  for (const [rate, m] of o.pacedRuns) {
    const r = o.rawPaced.get(rate);
    rows.push([
      `paced ${rate} msg/s, K=${PACED_K}, POST to sendMessage`,
      `p50 ${percentile(m.result.latencies, 50)} ms, p99 ${percentile(m.result.latencies, 99)} ms`,
      r ? `raw two-hop paced ${rate}/s: p50 ${fmt(r.p50Ms)} ms, p99 ${fmt(r.p99Ms)} ms` : "",
    ]);
  }
  for (const [k, m] of o.bursts) rows.push([`CPU per message, burst K=${k}`, cpuSummary(m), rawCpu]);
  for (const [rate, m] of o.pacedRuns) rows.push([`CPU per message, paced ${rate}/s`, cpuSummary(m), rawCpu]);
  rows.push([`CPU per message, first contact, K=${K_STEPS[0] ?? 1}`, cpuSummary(o.firstContact), ""]);
  if (o.counted) {
    rows.push([`Postgres statements per message, steady (one message per run)`, statementBreakdown(o.counted.steady), ""]);
    rows.push([`Postgres statements per message, first contact`, statementBreakdown(o.counted.firstContact), ""]);
    rows.push([`Postgres statements per message, burst (batched runs)`, statementBreakdown(o.counted.batched), ""]);
  }
  const steady = o.pacedRuns.values().next().value;
  if (steady) rows.push([`queue jobs per message, steady (paced ${[...o.pacedRuns.keys()][0]}/s)`, jobBreakdown(steady), "raw two-hop: 2"]);
  rows.push([`queue jobs per message, first contact`, jobBreakdown(o.firstContact), ""]);
  for (const [k, m] of o.bursts) rows.push([`queue jobs per message, burst K=${k}`, jobBreakdown(m), ""]);
  const apiRps = o.api.result.requestsPerSecond;
  rows.push([
    `POST /api/send, ${API_CONCURRENCY} in flight`,
    `${fmt(apiRps, 0)} req/s, p99 ${fmt(o.api.result.p99Ms)} ms`,
    `bare Fastify + INSERT + queue add: ${fmt(o.api.bare.requestsPerSecond, 0)} req/s, p99 ${fmt(o.api.bare.p99Ms)} ms; ratio ${apiRatioText(o.api)}`,
  ]);
  rows.push([
    `POST /api/send, per request`,
    `${o.counted ? `${perMessage(o.counted.api, "gateway")} statements, ` : ""}gateway CPU ${fmt((o.api.cpuMs.get("gateway") ?? 0) / o.api.messages, 2)} ms`,
    "bare: 1 statement, 1 queue add",
  ]);

  const header = ["figure", "now", "baseline, same run"] as const;
  const widths = [0, 1, 2].map((i) => Math.max(header[i]!.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: readonly string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  log("");
  log(line(header));
  log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
  for (const r of rows) log(line(r));

  if (o.counted && TOP > 0) {
    log("");
    log(`statements per message by process class, steady, top ${TOP}:`);
    printTopStatements(o.counted.steady);
    log("");
    log(`statements per message by process class, first contact, top ${TOP}:`);
    printTopStatements(o.counted.firstContact);
    log("");
    log(`statements per POST /api/send, top ${TOP}:`);
    printTopStatements(o.counted.api, ["gateway"]);
  }
  const pgSplit = (m: PhaseFigures) =>
    [...m.postgresByClass].filter(([, ms]) => ms > 0).map(([cls, ms]) => `${cls} ${fmt(ms / m.messages, 2)}`).join(", ");
  log("");
  if (steady) log(`Postgres backend CPU per message by the class it serves (ms): paced ${[...o.pacedRuns.keys()][0]}/s: ${pgSplit(steady)}`);
  const lastBurst = [...o.bursts].at(-1);
  if (lastBurst) log(`  burst K=${lastBurst[0]}: ${pgSplit(lastBurst[1])}`);
  const phases: PhaseFigures[] = [o.firstContact, ...o.bursts.values(), ...o.pacedRuns.values(), o.api];
  const others = phases.reduce((a, m) => a + m.othersCpuMs, 0) / phases.reduce((a, m) => a + m.wallMs, 0);
  log(
    `machine: ${availableParallelism()} cores; besides the bench, its services, Postgres backends and Redis, ` +
      `the machine was busy ${fmt(others * 100, 0)} % of one core on average during the measured phases` +
      (others > 0.25 ? ". WARNING: something else was running; these figures understate the code" : ""),
  );
}

function printTopStatements(m: PhaseFigures, classes: readonly string[] = SERVICE_CLASSES): void {
  for (const cls of classes) {
    const counts = m.statements?.get(cls);
    if (!counts || counts.total === 0) continue;
    log(`  ${cls}: ${fmt(counts.total / m.messages)}`);
    const top = [...counts.bySql].sort((a, b) => b[1] - a[1]).slice(0, TOP);
    for (const [sql, n] of top) log(`    ${fmt(n / m.messages, 2).padStart(6)}  ${shortSql(sql)}`);
  }
}

/** Prisma's SQL, readable on one line: `"public"."t"."c"` as `c`, long lists elided, at most 180 characters. */
function shortSql(sql: string): string {
  const short = sql
    .replace(/"public"\."(\w+)"\."(\w+)"/g, "$2")
    .replace(/"public"\."(\w+)"/g, "$1")
    .replace(/^SELECT ((?:\w+, ){4,}\w+) FROM/, (_, cols: string) => `SELECT <${cols.split(", ").length} columns> FROM`)
    .replace(/\(((?:"?\w+"?,){4,}"?\w+"?)\)/g, (_, cols: string) => `(<${cols.split(",").length} columns>)`)
    .replace(/VALUES \(((?:\$\d+,){4,}\$\d+)\)/g, (_, vals: string) => `VALUES (<${vals.split(",").length} values>)`);
  return short.length > 180 ? `${short.slice(0, 177)}...` : short;
}

try {
  await main();
  await cleanup();
  process.exit(0);
} catch (error) {
  console.error(error);
  for (const p of running) console.error(`--- pid ${p.pid} output (tail):\n${p.tail().slice(-3000)}`);
  await cleanup();
  process.exit(1);
}
