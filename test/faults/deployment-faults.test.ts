import { createHash } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai.fake";
import { startFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.fake";
import { TEST_REDIS_URL, clearQueuePrefix, createTestDatabase, testQueuePrefix, waitFor, type TestDatabase } from "../support/infra";
import { TEST_BOT_TOKEN } from "../support/nahida-harness";
import { spawnTsProcess, type SpawnedProcess } from "../support/processes";
import { mulberry32 } from "../support/seeded-random";
import { Redis } from "ioredis";

// A small deployment of separate processes (2 ingress-telegram pollers, 2 agent-workers,
// 2 deliveries) on one database, driven through SIGKILLs of every role (the poller leader
// too), a wipe of every Redis key of the deployment and the termination of every Postgres
// backend of its database. Whatever happens: every message is answered, no process crashes,
// and nothing is sent twice except a part its delivery lists as uncertain.

const MAIN = "services/launcher/src/main.ts";
/** A short lease so takeovers fit in CI; every recovery time derives from it. */
const LEASE_MS = 3_000;
type Role = "ingress-telegram" | "agent-worker" | "delivery";
const ROLES: Role[] = ["ingress-telegram", "ingress-telegram", "agent-worker", "agent-worker", "delivery", "delivery"];

interface Replica {
  role: Role;
  proc: SpawnedProcess;
  /** Set before we kill it: its exit is expected. */
  killed: boolean;
}

const TOKEN_RE = /\bt\d+x\b/g;

describe("a deployment of separate processes under SIGKILLs, a Redis wipe and a Postgres backend purge", () => {
  let t: TestDatabase;
  let telegram: FakeTelegram;
  let openai: FakeOpenAI;
  let redis: Redis;
  let admin: pg.Client;
  let prefix: string;
  const replicas: Replica[] = [];
  const crashes: string[] = [];
  /** When each message (by token) was pushed to Telegram. */
  const pushedAt = new Map<string, number>();
  let nextToken = 0;

  const env = () => ({
    DATABASE_URL: t.url,
    REDIS_URL: TEST_REDIS_URL,
    NAHIDA_QUEUE_PREFIX: prefix,
    NAHIDA_LEASE_MS: String(LEASE_MS),
    TELEGRAM_BOT_TOKEN: TEST_BOT_TOKEN,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    TELEGRAM_POLL_TIMEOUT_SECONDS: "1",
    OPENAI_BASE_URL: openai.baseURL,
    OPENAI_API_KEY: "test-key",
    OPENAI_MODEL: "fake-model",
    NAHIDA_SHUTDOWN_TIMEOUT_MS: "3000",
    LOG_LEVEL: "info",
  });

  async function start(role: Role): Promise<Replica> {
    const proc = await spawnTsProcess(MAIN, { ...env(), NAHIDA_SERVICES: role }, { readyText: "nahida started", timeoutMs: 60_000 });
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
    const holder = await redis.get(`${prefix}:telegram:poller:${tokenId}`);
    const live = replicas.filter((r) => r.role === "ingress-telegram" && !r.killed);
    return live.find((r) => holder?.split(":")[1] === String(r.proc.pid)) ?? live[0];
  }

  /** Replacements still starting, by role. */
  const starting = new Map<Role, Promise<unknown>>();

  /**
   * SIGKILLs one live replica of `role` and starts its replacement. It waits for an earlier
   * replacement of the role first, so one replica of every role is always up and the
   * measured times are recovery times, not outages of a whole role.
   */
  async function killAndReplace(role: Role, random: () => number): Promise<void> {
    await starting.get(role);
    const live = replicas.filter((r) => r.role === role && !r.killed);
    const victim = role === "ingress-telegram" ? await pollerLeader() : live[Math.floor(random() * live.length)];
    if (!victim) return;
    victim.killed = true;
    victim.proc.kill("SIGKILL");
    await victim.proc.exited;
    const replacement = start(role);
    starting.set(role, replacement);
    await replacement;
  }

  async function terminateBackends(): Promise<void> {
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [
      new URL(t.url).pathname.slice(1),
    ]);
  }

  function push(chat: number): string {
    const token = `t${nextToken++}x`;
    pushedAt.set(token, Date.now());
    telegram.pushUpdate({
      message: { message_id: nextToken, from: { id: chat, is_bot: false, first_name: "F" }, chat: { id: chat, type: "private", first_name: "F" }, date: 1778400180, text: `note ${token}` },
    });
    return token;
  }

  /** Texts sent to each chat, and for each token the time of the first reply naming it. */
  function replies(chats: number[]) {
    const answeredAt = new Map<string, number>();
    const texts = new Map<number, string[]>();
    for (const chat of chats) {
      const sent = telegram.sent(chat);
      texts.set(chat, sent.map((c) => String(c.params.text)));
      for (const call of sent) {
        for (const token of String(call.params.text).match(TOKEN_RE) ?? []) {
          if (!answeredAt.has(token)) answeredAt.set(token, call.at.getTime());
        }
      }
    }
    return { answeredAt, texts };
  }

  /** Texts sent more than once to a chat whose deliveries do not list an uncertain part. */
  async function unexplainedDuplicates(chats: number[], texts: Map<number, string[]>): Promise<string[]> {
    const uncertain = await t.db.pool.query<{ target: string; text: string }>(
      "SELECT target, message->>'text' AS text FROM deliveries WHERE cardinality(uncertain_parts) > 0",
    );
    const allowed = new Set(uncertain.rows.map((r) => `${r.target}|${r.text}`));
    const duplicates: string[] = [];
    for (const chat of chats) {
      const seen = new Map<string, number>();
      for (const text of texts.get(chat) ?? []) seen.set(text, (seen.get(text) ?? 0) + 1);
      for (const [text, n] of seen) if (n > 1 && !allowed.has(`telegram:private:${chat}|${text}`)) duplicates.push(`${chat}: ${n}× ${text}`);
    }
    return duplicates;
  }

  async function uncertainRows(chats: number[]): Promise<number> {
    const rows = await t.db.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM deliveries WHERE cardinality(uncertain_parts) > 0 AND target = ANY($1)",
      [chats.map((c) => `telegram:private:${c}`)],
    );
    return rows.rows[0]!.n;
  }

  const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

  beforeAll(async () => {
    t = await createTestDatabase("faults");
    telegram = await startFakeTelegram({ botUsername: "nahida_test_bot", botId: 7000000001 });
    openai = await startFakeOpenAI();
    // The answer names every message of the batch it answers, so a reply can be traced.
    openai.onRequest((request) => {
      const messages = request.body.messages as { role: string; content: unknown }[];
      const lastAnswer = messages.map((m) => m.role).lastIndexOf("assistant");
      const asked = messages.slice(lastAnswer + 1).filter((m) => m.role === "user").map((m) => JSON.stringify(m.content));
      const tokens = [...new Set(asked.flatMap((c) => c.match(TOKEN_RE) ?? []))];
      return { content: `noted ${tokens.join(" ")}` };
    });
    redis = new Redis(TEST_REDIS_URL);
    admin = new pg.Client({ connectionString: t.url });
    await admin.connect();
    prefix = testQueuePrefix("faults");
    await Promise.all(ROLES.map((role) => start(role)));
  }, 120_000);

  afterAll(async () => {
    for (const r of replicas) {
      r.killed = true;
      r.proc.kill("SIGKILL");
    }
    await Promise.all(replicas.map((r) => r.proc.exited));
    await admin?.end();
    redis?.disconnect();
    await telegram?.close();
    await openai?.close();
    if (prefix) await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await t?.drop();
  });

  it("answers every message through 8 SIGKILLs, a Redis wipe and a backend purge, with no crash and no unexplained duplicate", async () => {
    const random = mulberry32(9);
    const chats = Array.from({ length: 20 }, (_, i) => 760_000_000 + i);
    const tokens: string[] = [];
    const faults: Promise<void>[] = [];
    const kills: Role[] = ["agent-worker", "delivery", "ingress-telegram", "agent-worker", "delivery", "ingress-telegram", "agent-worker", "delivery"];
    // 100 messages over 20 s; a fault every 2 s from the second second on.
    for (let i = 0; i < 100; i++) {
      tokens.push(push(chats[Math.floor(random() * chats.length)]!));
      if (i % 10 === 5) {
        const step = (i - 5) / 10;
        if (step < kills.length) faults.push(killAndReplace(kills[step]!, random));
        else if (step === 8) faults.push(clearQueuePrefix(TEST_REDIS_URL, prefix));
        else faults.push(terminateBackends());
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    await Promise.all(faults);

    const { answeredAt, texts } = await waitFor(
      async () => {
        const r = replies(chats);
        return tokens.every((token) => r.answeredAt.has(token)) ? r : undefined;
      },
      120_000,
      "every message to be answered",
      250,
    ).catch((error: Error) => {
      const r = replies(chats);
      throw new Error(`${error.message}; unanswered: ${tokens.filter((token) => !r.answeredAt.has(token)).join(" ")}\n${crashes.join("\n")}`);
    });

    expect(crashes).toEqual([]);
    expect(await unexplainedDuplicates(chats, texts)).toEqual([]);
    const latencies = tokens.map((token) => answeredAt.get(token)! - pushedAt.get(token)!).sort((a, b) => a - b);
    console.log(
      `faults: ${tokens.length} messages, 8 SIGKILLs + Redis wipe + backend purge, lease ${LEASE_MS} ms: ` +
        `message → reply p50 ${percentile(latencies, 50)} ms, p95 ${percentile(latencies, 95)} ms, max ${latencies.at(-1)} ms; ` +
        `uncertain deliveries ${await uncertainRows(chats)}`,
    );
  }, 240_000);

  it("sends nothing twice and nothing uncertain under a Redis wipe and a backend purge alone", async () => {
    const random = mulberry32(10);
    const chats = Array.from({ length: 10 }, (_, i) => 761_000_000 + i);
    const tokens: string[] = [];
    for (let i = 0; i < 40; i++) {
      tokens.push(push(chats[Math.floor(random() * chats.length)]!));
      if (i === 10) await clearQueuePrefix(TEST_REDIS_URL, prefix);
      if (i === 25) await terminateBackends();
      await new Promise((r) => setTimeout(r, 100));
    }
    const { answeredAt, texts } = await waitFor(
      async () => {
        const r = replies(chats);
        return tokens.every((token) => r.answeredAt.has(token)) ? r : undefined;
      },
      90_000,
      "every message to be answered",
      250,
    );
    expect(crashes).toEqual([]);
    const sentTwice = [...texts].flatMap(([chat, sent]) => sent.filter((text, i) => sent.indexOf(text) !== i).map((text) => `${chat}: ${text}`));
    expect(sentTwice).toEqual([]);
    expect(await uncertainRows(chats)).toBe(0);
    const latencies = tokens.map((token) => answeredAt.get(token)! - pushedAt.get(token)!).sort((a, b) => a - b);
    console.log(`faults without kills: ${tokens.length} messages, Redis wipe + backend purge: message → reply p50 ${percentile(latencies, 50)} ms, max ${latencies.at(-1)} ms`);
  }, 180_000);
});
