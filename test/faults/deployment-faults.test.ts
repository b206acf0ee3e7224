import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/infra";
import { percentile, pushPrivateText, startDeployment, type Deployment, type Role } from "../support/deployment";
import { mulberry32 } from "../support/seeded-random";

// A small deployment of separate processes (2 ingress-telegram pollers, 2 agent-workers,
// 2 deliveries) on one database, driven through SIGKILLs of every role (the poller leader
// too), a wipe of every Redis key of the deployment and the termination of every Postgres
// backend of its database. Whatever happens: every message is answered, no process crashes,
// and nothing is sent twice except a part its delivery lists as uncertain.

/** A short lease so takeovers fit in CI; every recovery time derives from it. */
const LEASE_MS = 3_000;
const TOKEN_RE = /\bt\d+x\b/g;

describe("a deployment of separate processes under SIGKILLs, a Redis wipe and a Postgres backend purge", () => {
  let d: Deployment;
  /** When each message (by token) was pushed to Telegram. */
  const pushedAt = new Map<string, number>();
  let nextToken = 0;

  function push(chat: number): string {
    const token = `t${nextToken++}x`;
    pushedAt.set(token, Date.now());
    pushPrivateText(d.telegram, chat, `note ${token}`);
    return token;
  }

  /** Texts sent to each chat, and for each token the time of the first reply naming it. */
  function replies(chats: number[]) {
    const answeredAt = new Map<string, number>();
    const texts = new Map<number, string[]>();
    for (const chat of chats) {
      const sent = d.telegram.sent(chat);
      texts.set(chat, sent.map((c) => String(c.params.text)));
      for (const call of sent) {
        for (const token of String(call.params.text).match(TOKEN_RE) ?? []) {
          if (!answeredAt.has(token)) answeredAt.set(token, call.at.getTime());
        }
      }
    }
    return { answeredAt, texts };
  }

  async function allAnswered(tokens: string[], chats: number[], timeoutMs: number) {
    return waitFor(
      async () => {
        const r = replies(chats);
        return tokens.every((token) => r.answeredAt.has(token)) ? r : undefined;
      },
      timeoutMs,
      "every message to be answered",
      250,
    ).catch(async (error: Error) => {
      const r = replies(chats);
      const unanswered = tokens.filter((token) => !r.answeredAt.has(token));
      // Where each unanswered message got to: stored? in a lane? in which state?
      const trail = await d.t.db.pool.query(
        `SELECT m.message->'message'->>'text' AS text, m.routed_at IS NOT NULL AS routed, li.status, li.attempts, li.error, lr.status AS run_status
           FROM inbound_messages m LEFT JOIN lane_items li ON li.ref_id = m.id::text LEFT JOIN lane_runs lr ON lr.id = li.run_id
          WHERE m.message->'message'->>'text' = ANY($1)`,
        [unanswered.map((token) => `note ${token}`)],
      );
      throw new Error(`${error.message}; unanswered: ${unanswered.join(" ")}\n${JSON.stringify(trail.rows)}\n${d.crashes.join("\n")}`);
    });
  }

  /** Texts sent more than once to a chat whose deliveries do not list an uncertain part. */
  async function unexplainedDuplicates(chats: number[], texts: Map<number, string[]>): Promise<string[]> {
    const uncertain = await d.t.db.pool.query<{ target: string; text: string }>(
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
    const rows = await d.t.db.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM deliveries WHERE cardinality(uncertain_parts) > 0 AND target = ANY($1)",
      [chats.map((c) => `telegram:private:${c}`)],
    );
    return rows.rows[0]!.n;
  }

  const latencies = (tokens: string[], answeredAt: Map<string, number>) =>
    tokens.map((token) => answeredAt.get(token)! - pushedAt.get(token)!).sort((a, b) => a - b);

  beforeAll(async () => {
    d = await startDeployment(
      "faults",
      ["ingress-telegram", "ingress-telegram", "agent-worker", "agent-worker", "delivery", "delivery"],
      { NAHIDA_LEASE_MS: String(LEASE_MS) },
    );
    // The answer names every message of the batch it answers, so a reply can be traced.
    d.openai.onRequest((request) => {
      const messages = request.body.messages as { role: string; content: unknown }[];
      const lastAnswer = messages.map((m) => m.role).lastIndexOf("assistant");
      const asked = messages.slice(lastAnswer + 1).filter((m) => m.role === "user").map((m) => JSON.stringify(m.content));
      return { content: `noted ${[...new Set(asked.flatMap((c) => c.match(TOKEN_RE) ?? []))].join(" ")}` };
    });
  }, 120_000);
  afterAll(async () => d?.close());

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
        if (step < kills.length) faults.push(d.killAndReplace(kills[step]!, random));
        else if (step === 8) faults.push(d.wipeRedis());
        else faults.push(d.terminateBackends());
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    await Promise.all(faults);

    const { answeredAt, texts } = await allAnswered(tokens, chats, 120_000);
    expect(d.crashes).toEqual([]);
    expect(await unexplainedDuplicates(chats, texts)).toEqual([]);
    const sorted = latencies(tokens, answeredAt);
    console.log(
      `faults: ${tokens.length} messages, 8 SIGKILLs + Redis wipe + backend purge, lease ${LEASE_MS} ms: ` +
        `message → reply p50 ${percentile(sorted, 50)} ms, p95 ${percentile(sorted, 95)} ms, max ${sorted.at(-1)} ms; ` +
        `uncertain deliveries ${await uncertainRows(chats)}`,
    );
  }, 240_000);

  it("sends nothing twice and nothing uncertain under a Redis wipe and a backend purge alone", async () => {
    const random = mulberry32(10);
    const chats = Array.from({ length: 10 }, (_, i) => 761_000_000 + i);
    const tokens: string[] = [];
    for (let i = 0; i < 40; i++) {
      tokens.push(push(chats[Math.floor(random() * chats.length)]!));
      if (i === 10) await d.wipeRedis();
      if (i === 25) await d.terminateBackends();
      await new Promise((r) => setTimeout(r, 100));
    }
    const { answeredAt, texts } = await allAnswered(tokens, chats, 90_000);
    expect(d.crashes).toEqual([]);
    const sentTwice = [...texts].flatMap(([chat, sent]) => sent.filter((text, i) => sent.indexOf(text) !== i).map((text) => `${chat}: ${text}`));
    expect(sentTwice).toEqual([]);
    expect(await uncertainRows(chats)).toBe(0);
    const sorted = latencies(tokens, answeredAt);
    console.log(`faults without kills: ${tokens.length} messages, Redis wipe + backend purge: message → reply p50 ${percentile(sorted, 50)} ms, max ${sorted.at(-1)} ms`);
  }, 180_000);
});
