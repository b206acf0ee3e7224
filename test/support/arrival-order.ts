import { expect } from "vitest";
import { waitFor } from "./infra";
import { pushPrivateText, type Deployment } from "./deployment";

const TOKEN_RE = /\bo(\d+)-(\d+)\b/g;

/**
 * SPEC §3: a session's messages are handled in arrival order. Sends `messages` over `chats`
 * private chats (chat ids from `firstChat`), wipes the deployment's Redis once the runs are
 * under way, waits until every lane item is done and checks that each chat's messages
 * reached the model in the order they were sent, each of them. The fake LLM must answer.
 */
export async function expectArrivalOrder(d: Deployment, options: { messages: number; chats: number; firstChat: number }): Promise<void> {
  const { messages, chats, firstChat } = options;
  const open = async () =>
    (await d.t.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM lane_items WHERE status IN ('pending', 'running')")).rows[0]!.n;
  const done = async () => (await d.t.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM lane_items WHERE status = 'done'")).rows[0]!.n;
  const doneBefore = await done();
  const requestsBefore = d.openai.requests.length;

  const sent = new Map<number, number>();
  for (let i = 0; i < messages; i++) {
    const chat = firstChat + (i % chats);
    const n = (sent.get(chat) ?? 0) + 1;
    sent.set(chat, n);
    pushPrivateText(d.telegram, chat, `message o${chat}-${n}`);
  }
  await waitFor(async () => d.openai.requests.length - requestsBefore >= chats, 60_000, "the runs to be under way");
  await d.wipeRedis();
  await waitFor(async () => (await done()) - doneBefore === messages && (await open()) === 0, 120_000, "every lane item to be done", 250);

  // What each chat's model calls were asked, in call order: the messages since the last answer.
  const seen = new Map<number, number[]>();
  for (const request of d.openai.requests.slice(requestsBefore)) {
    const asked = request.body.messages as { role: string; content: unknown }[];
    const lastAnswer = asked.map((m) => m.role).lastIndexOf("assistant");
    for (const m of asked.slice(lastAnswer + 1).filter((x) => x.role === "user")) {
      for (const [, chat, n] of JSON.stringify(m.content).matchAll(TOKEN_RE)) {
        if (!sent.has(Number(chat))) continue;
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
}
