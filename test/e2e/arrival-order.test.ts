import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/infra";
import { pushPrivateText, startDeployment, type Deployment } from "../support/deployment";

// SPEC §3: a session's messages are handled in arrival order. A burst over many chats,
// through several agent-worker processes and a Redis wipe in the middle, must reach the
// model in each chat's order: the ingress puts a message in its lane in the statement that
// stores it, so no queue hop can reorder it.

const MESSAGES = 2_000;
const CHATS = 100;
const TOKEN_RE = /\bo(\d+)-(\d+)\b/g;

describe("arrival order across agent-worker processes", () => {
  let d: Deployment;
  beforeAll(async () => {
    d = await startDeployment("arrival_order", ["ingress-telegram", "agent-worker", "agent-worker", "agent-worker", "delivery"], {
      NAHIDA_LEASE_MS: "3000",
      AGENT_HISTORY_TURNS: "4",
    });
    d.openai.onRequest(() => ({ content: "ok" }));
  }, 120_000);
  afterAll(async () => d?.close());

  const open = async () =>
    (await d.t.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM lane_items WHERE status IN ('pending', 'running')")).rows[0]!.n;
  const done = async () => (await d.t.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM lane_items WHERE status = 'done'")).rows[0]!.n;

  it(`hands ${MESSAGES} messages over ${CHATS} chats to the model in each chat's arrival order, through a Redis wipe`, async () => {
    const sent = new Map<number, number>();
    for (let i = 0; i < MESSAGES; i++) {
      const chat = 770_000_000 + (i % CHATS);
      const n = (sent.get(chat) ?? 0) + 1;
      sent.set(chat, n);
      pushPrivateText(d.telegram, chat, `message o${chat}-${n}`);
    }
    await waitFor(async () => d.openai.requests.length >= CHATS, 60_000, "the runs to be under way");
    await d.wipeRedis();
    await waitFor(async () => (await done()) === MESSAGES && (await open()) === 0, 120_000, "every lane item to be done", 250);

    // What each chat's model calls were asked, in call order: the messages since the last answer.
    const seen = new Map<number, number[]>();
    for (const request of d.openai.requests) {
      const messages = request.body.messages as { role: string; content: unknown }[];
      const lastAnswer = messages.map((m) => m.role).lastIndexOf("assistant");
      for (const m of messages.slice(lastAnswer + 1).filter((x) => x.role === "user")) {
        for (const [, chat, n] of JSON.stringify(m.content).matchAll(TOKEN_RE)) {
          const list = seen.get(Number(chat)) ?? [];
          // A retried run asks again; only the first time a message reaches the model counts.
          if (!list.includes(Number(n))) list.push(Number(n));
          seen.set(Number(chat), list);
        }
      }
    }
    const inversions: string[] = [];
    for (const [chat, total] of sent) {
      const order = seen.get(chat) ?? [];
      expect(order.length, `chat ${chat} messages that reached the model`).toBe(total);
      for (let i = 1; i < order.length; i++) if (order[i]! < order[i - 1]!) inversions.push(`${chat}: ${order[i - 1]} before ${order[i]}`);
    }
    expect(inversions).toEqual([]);
    expect(d.crashes).toEqual([]);
  }, 240_000);
});
