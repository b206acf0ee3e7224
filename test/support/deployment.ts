import { createHash } from "node:crypto";
import pg from "pg";
import { Redis, type Cluster } from "ioredis";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai.fake";
import { startFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.fake";
import { TEST_REDIS_URL, clearQueuePrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from "./infra";
import { TEST_BOT_TOKEN } from "./nahida-harness";
import { spawnNodeProcess, type SpawnedProcess } from "./processes";

const MAIN = "services/launcher/src/main.ts";
/** `npm run build`'s launcher: what the image runs. */
const BUILT_MAIN = "dist/nahida.js";

export type Role = "gateway" | "ingress-telegram" | "ingress-milky" | "agent-worker" | "delivery" | "scheduler";

export interface DeploymentOptions {
  /** Run the built JavaScript (`node dist/nahida.js`, built beforehand) instead of the sources through tsx. */
  built?: boolean;
  /**
   * Reach Postgres through a pooler in transaction mode: DATABASE_URL is `url(the database)`
   * with DATABASE_POOLER=transaction, and migrations go to the database directly.
   */
  transactionPooler?: { urlOf(directUrl: string): string };
  /**
   * Reach Redis some other way than TEST_REDIS_URL (a Sentinel group the test started): the
   * variables the services get in place of REDIS_URL, and a client for the test's own reads.
   */
  redis?: {
    env: Record<string, string>;
    connect(): Redis | Cluster;
    /** The prefix of the services' Redis keys for a queue prefix (on a cluster, a hash tag). */
    keyPrefix?(prefix: string): string;
  };
}

export interface Replica {
  role: Role;
  proc: SpawnedProcess;
  /** Set before the test kills it: its exit is expected. */
  killed: boolean;
}

export interface Deployment {
  t: TestDatabase;
  telegram: FakeTelegram;
  openai: FakeOpenAI;
  redis: Redis | Cluster;
  /** NAHIDA_QUEUE_PREFIX of the services. */
  prefix: string;
  /** What their Redis keys start with: the prefix, or on a cluster its hash tag. */
  keyPrefix: string;
  replicas: Replica[];
  /** One entry (role, pid, exit code, output tail) per process that exited without being killed. */
  crashes: string[];
  /** Starts one more replica; `env` adds to the deployment's (a role's own NAHIDA_HEALTH_PORT). */
  start(role: Role, env?: Record<string, string>): Promise<Replica>;
  /**
   * SIGKILLs one live replica of `role` (the poller leader for the ingress) and starts its
   * replacement. It waits for an earlier replacement of the role first, so one replica of
   * every role stays up and measured times are recovery times, not outages of a whole role.
   */
  killAndReplace(role: Role, pick?: () => number): Promise<void>;
  /** Deletes every Redis key of the deployment (jobs, locks, offsets). */
  wipeRedis(): Promise<void>;
  /** Terminates every Postgres backend of the deployment's database. */
  terminateBackends(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Nahida as separate processes (the launcher, from its sources or built; one service each), on a fresh
 * database and queue prefix, polling a fake Telegram and asking a fake LLM, reached only
 * through configuration.
 */
export async function startDeployment(label: string, roles: Role[], env: Record<string, string> = {}, options: DeploymentOptions = {}): Promise<Deployment> {
  const t = await createTestDatabase(label);
  const telegram = await startFakeTelegram({ botUsername: "nahida_test_bot", botId: 7000000001 });
  const openai = await startFakeOpenAI();
  const redis = options.redis ? options.redis.connect() : new Redis(TEST_REDIS_URL);
  const admin = new pg.Client({ connectionString: t.url });
  await admin.connect();
  const prefix = testQueuePrefix(label);
  const keyPrefix = options.redis?.keyPrefix?.(prefix) ?? prefix;
  const replicas: Replica[] = [];
  const crashes: string[] = [];
  const starting = new Map<Role, Promise<unknown>>();
  const baseEnv = {
    ...(options.transactionPooler
      ? { DATABASE_URL: options.transactionPooler.urlOf(t.url), DATABASE_DIRECT_URL: t.url, DATABASE_POOLER: "transaction" }
      : { DATABASE_URL: t.url }),
    // An empty REDIS_URL is unset, whatever the shell running the tests exports.
    ...(options.redis ? { REDIS_URL: "", ...options.redis.env } : { REDIS_URL: TEST_REDIS_URL }),
    NAHIDA_QUEUE_PREFIX: prefix,
    TELEGRAM_BOT_TOKEN: TEST_BOT_TOKEN,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    TELEGRAM_POLL_TIMEOUT_SECONDS: "1",
    OPENAI_BASE_URL: openai.baseURL,
    OPENAI_API_KEY: "test-key",
    OPENAI_MODEL: "fake-model",
    NAHIDA_SHUTDOWN_TIMEOUT_MS: "3000",
    // Several deployments may run at once in the suite, under Postgres' 100 connections.
    DATABASE_POOL_SIZE: "4",
    // Info prints the "nahida started" line the spawn waits for.
    LOG_LEVEL: "info",
    ...env,
  };

  async function start(role: Role, extra: Record<string, string> = {}): Promise<Replica> {
    const args = options.built ? ["--enable-source-maps", BUILT_MAIN] : ["--import", "tsx", MAIN];
    const proc = await spawnNodeProcess(args, { ...baseEnv, ...extra, NAHIDA_SERVICES: role }, { readyText: "nahida started", timeoutMs: 60_000 });
    const replica: Replica = { role, proc, killed: false };
    void proc.exited.then((code) => {
      if (!replica.killed) crashes.push(`${role} pid ${proc.pid} exited (${code}):\n${proc.output().slice(-3_000)}`);
    });
    replicas.push(replica);
    return replica;
  }

  /** The live replica holding the poller lock (its holder id carries its pid), else any live ingress. */
  async function pollerLeader(): Promise<Replica | undefined> {
    const tokenId = createHash("sha256").update(TEST_BOT_TOKEN).digest("hex").slice(0, 16);
    const holder = await redis.get(`${keyPrefix}:telegram:poller:${tokenId}`);
    const live = replicas.filter((r) => r.role === "ingress-telegram" && !r.killed);
    return live.find((r) => holder?.split(":")[1] === String(r.proc.pid)) ?? live[0];
  }

  const deployment: Deployment = {
    t,
    telegram,
    openai,
    redis,
    prefix,
    keyPrefix,
    replicas,
    crashes,
    start,
    async killAndReplace(role, pick = Math.random) {
      await starting.get(role);
      const live = replicas.filter((r) => r.role === role && !r.killed);
      const victim = role === "ingress-telegram" ? await pollerLeader() : live[Math.floor(pick() * live.length)];
      if (!victim) return;
      victim.killed = true;
      victim.proc.kill("SIGKILL");
      await victim.proc.exited;
      const replacement = start(role);
      starting.set(role, replacement);
      await replacement;
    },
    wipeRedis: () => clearQueuePrefix(redis, keyPrefix),
    async terminateBackends() {
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [
        new URL(t.url).pathname.slice(1),
      ]);
    },
    async close() {
      for (const r of replicas) {
        r.killed = true;
        r.proc.kill("SIGKILL");
      }
      await Promise.all(replicas.map((r) => r.proc.exited));
      await admin.end();
      await clearQueuePrefix(redis, keyPrefix);
      redis.disconnect();
      await telegram.close();
      await openai.close();
      await t.drop();
    },
  };
  try {
    await Promise.all(roles.map((role) => start(role)));
  } catch (error) {
    await deployment.close();
    throw error;
  }
  return deployment;
}

/** Pushes a private text message from `chat` to the fake Telegram. */
export function pushPrivateText(telegram: FakeTelegram, chat: number, text: string): void {
  telegram.pushUpdate({
    message: { message_id: 1, from: { id: chat, is_bot: false, first_name: "F" }, chat: { id: chat, type: "private", first_name: "F" }, date: 1778400180, text },
  });
}

export const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
