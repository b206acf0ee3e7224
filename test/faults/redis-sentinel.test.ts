import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pushPrivateText, startDeployment, type Deployment } from "../support/deployment";
import { waitFor } from "../support/infra";
import { startSentinelGroup, type SentinelGroup } from "../support/redis-sentinel";

// Redis behind Sentinel (a master, a replica, three sentinels) with REDIS_SENTINELS in place
// of REDIS_URL: the master is SIGKILLed while messages flow through the ingress, two agent
// workers and two delivery processes. The replica is promoted without the writes it had not
// yet received; every message is still answered, each once, from the ledger.

const CHATS = 240;
const PER_SECOND = 40;

describe("a Redis Sentinel failover mid-traffic", () => {
  let group: SentinelGroup;
  let d: Deployment;
  beforeAll(async () => {
    group = await startSentinelGroup();
    d = await startDeployment("sentinel", ["ingress-telegram", "agent-worker", "agent-worker", "delivery", "delivery"], { NAHIDA_LEASE_MS: "3000" }, { redis: group });
    // One chat per message, and the answer names it: an answer sent twice shows as two.
    d.openai.onRequest((request) => ({ content: `answer to ${/question (m\d+)/.exec(JSON.stringify(request.body.messages.at(-1)?.content))?.[1]}` }));
  }, 120_000);
  afterAll(async () => {
    await d?.close();
    await group?.close();
  });

  it("answers every message once after the master is killed, and says how long the answers stopped", async () => {
    const firstChat = 930_000_000;
    const pushedAt: number[] = [];
    const pushing = (async () => {
      for (let i = 0; i < CHATS; i++) {
        pushPrivateText(d.telegram, firstChat + i, `question m${i}`);
        pushedAt.push(Date.now());
        await new Promise((r) => setTimeout(r, 1000 / PER_SECOND));
      }
    })();
    // Mid-traffic: once answers are flowing.
    await waitFor(async () => d.telegram.sent().length >= PER_SECOND, 60_000, "answers to be flowing");
    const before = await group.master();
    const { killedAt } = await group.killMaster();
    await pushing;

    const answered = () => new Set(d.telegram.sent().map((c) => String(c.params.chat_id)));
    await waitFor(async () => answered().size === CHATS, 120_000, `all ${CHATS} chats to be answered`, 250);
    // The positive marker before counting what came twice: the ledger has nothing left to do.
    await waitFor(
      async () => {
        const { rows } = await d.t.db.pool.query<{ open: number; unsent: number }>(
          `SELECT (SELECT count(*)::int FROM lane_items WHERE status IN ('pending', 'running')) AS open,
                  (SELECT count(*)::int FROM deliveries WHERE status IN ('queued', 'sending')) AS unsent`,
        );
        return rows[0]!.open === 0 && rows[0]!.unsent === 0;
      },
      30_000,
      "every lane item done and every delivery sent",
      250,
    );
    const after = await group.master();
    expect(after.port).not.toBe(before.port);

    const sent = d.telegram.sent();
    // The first message that arrived after the kill went through the promoted master (its wake, its delivery job).
    const firstAfter = pushedAt.findIndex((at) => at > killedAt);
    const answerOf = (i: number) => sent.find((c) => String(c.params.chat_id) === String(firstChat + i))!.at.getTime();
    const answerTimes = sent.map((c) => c.at.getTime()).sort((a, b) => a - b);
    const longestPause = Math.max(...answerTimes.slice(1).map((t, i) => t - answerTimes[i]!));
    console.log(
      `redis sentinel failover: master ${before.port} SIGKILLed, ${after.port} promoted; the first message after the kill ` +
        `(${pushedAt[firstAfter]! - killedAt} ms after it) answered ${answerOf(firstAfter) - killedAt} ms after the kill; ` +
        `longest pause between two answers ${longestPause} ms`,
    );
    const byChat = new Map<string, string[]>();
    for (const call of sent) byChat.set(String(call.params.chat_id), [...(byChat.get(String(call.params.chat_id)) ?? []), String(call.params.text)]);
    const twice = [...byChat].filter(([, texts]) => texts.length !== 1);
    expect(twice).toEqual([]);
    for (const [chat, [text]] of byChat) expect(text).toBe(`answer to m${Number(chat) - firstChat}`);
    expect(d.crashes).toEqual([]);
  }, 240_000);
});
