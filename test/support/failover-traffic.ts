import { expect } from "vitest";
import type { RedisNode } from "@nahida/queue";
import { pushPrivateText, type Deployment } from "./deployment";
import { waitFor } from "./infra";
import { ledgerSettled } from "./ledger";

export interface FailoverFigures {
  messages: number;
  /** From the kill to the first answer to a message that arrived after it: when new traffic went through again. */
  firstAnswerAfterKillMs: number;
  /** The longest any message waited for its answer (one whose wake the dead server took waits for the sweep). */
  slowestAnswerMs: number;
  /** The longest time between two answers, around the kill. */
  longestPauseMs: number;
}

/**
 * Messages to the fake Telegram at `perSecond`, one new chat each, whose answers name them;
 * once answers flow, `kill` (the Redis master `master` names), and traffic goes on for
 * `afterKillMs` more. Then every chat must have exactly one answer, its own, after the
 * ledger has nothing left to do (the positive marker before counting what came twice), and
 * `master` must name another server. Prints the figures after `label`.
 */
export async function expectAnsweredOnceThroughKill(
  d: Deployment,
  options: {
    label: string;
    firstChat: number;
    perSecond: number;
    afterKillMs: number;
    master: () => Promise<RedisNode>;
    kill: () => Promise<{ killedAt: number }>;
  },
): Promise<FailoverFigures> {
  const { firstChat, perSecond } = options;
  const before = await options.master();
  d.openai.onRequest((request) => ({ content: `answer to ${/question (m\d+)/.exec(JSON.stringify(request.body.messages.at(-1)?.content))?.[1]}` }));
  const ours = () => d.telegram.sent().filter((c) => Number(c.params.chat_id) >= firstChat);
  const pushedAt: number[] = [];
  let killedAt: number | undefined;
  const pushing = (async () => {
    while (killedAt === undefined || Date.now() < killedAt + options.afterKillMs) {
      pushPrivateText(d.telegram, firstChat + pushedAt.length, `question m${pushedAt.length}`);
      pushedAt.push(Date.now());
      await new Promise((r) => setTimeout(r, 1000 / perSecond));
    }
  })();
  try {
    await waitFor(async () => ours().length >= perSecond / 2 || undefined, 60_000, "answers to be flowing");
    ({ killedAt } = await options.kill());
  } finally {
    killedAt ??= 0;
    await pushing;
  }
  const messages = pushedAt.length;
  try {
    await waitFor(async () => new Set(ours().map((c) => c.params.chat_id)).size === messages || undefined, 120_000, `all ${messages} chats to be answered`, 250);
  } catch (error) {
    // What the ledger says of the ones left, for whoever reads the failure.
    const answered = new Set(ours().map((c) => Number(c.params.chat_id)));
    const missing = pushedAt.map((_, i) => firstChat + i).filter((chat) => !answered.has(chat));
    const addresses = missing.map((chat) => `telegram:private:${chat}`);
    const { rows } = await d.t.db.pool
      .query(
        `SELECT a.address,
                (SELECT count(*)::int FROM inbound_messages m WHERE m.chat_address = a.address) AS inbound,
                (SELECT string_agg(li.status, ',') FROM lane_items li WHERE li.lane_key = 'chat:' || a.address) AS items,
                (SELECT string_agg(dl.status, ',') FROM deliveries dl WHERE dl.target = a.address) AS deliveries
           FROM unnest($1::text[]) AS a(address) LIMIT 10`,
        [addresses],
      )
      .catch((e: Error) => ({ rows: [e.message] }));
    // And what the queue says of their delivery jobs.
    const { Queue } = await import("bullmq");
    const outbound = new Queue("outbound", { connection: d.redis, prefix: d.keyPrefix });
    const queueState = await (async () => {
      const { rows: ids } = await d.t.db.pool.query<{ id: string }>("SELECT id FROM deliveries WHERE target = ANY($1::text[]) LIMIT 5", [addresses]);
      const jobs = await Promise.all(ids.map(async ({ id }) => {
        const job = await outbound.getJob(id);
        return { id, state: job ? await job.getState() : "missing", attemptsMade: job?.attemptsMade, failedReason: job?.failedReason };
      }));
      return { counts: await outbound.getJobCounts(), workers: (await outbound.getWorkers()).length, jobs };
    })().catch((e: Error) => e.message);
    await outbound.close();
    const tails = d.replicas.map((r) => `--- ${r.role} pid ${r.proc.pid}:\n${r.proc.output().slice(-2_500)}`).join("\n");
    throw new Error(`${(error as Error).message}: ${missing.length} unanswered (${missing.slice(0, 5).join(", ")}...), killed at ${killedAt}; ledger: ${JSON.stringify(rows)}; queue: ${JSON.stringify(queueState)}\n${tails}`);
  }
  await ledgerSettled(d.t.url, 30_000);

  const sent = ours();
  const byChat = new Map<number, string[]>();
  for (const call of sent) byChat.set(Number(call.params.chat_id), [...(byChat.get(Number(call.params.chat_id)) ?? []), String(call.params.text)]);
  expect([...byChat].filter(([, texts]) => texts.length !== 1)).toEqual([]);
  for (const [chat, [text]] of byChat) expect(text).toBe(`answer to m${chat - firstChat}`);

  const answerAt = new Map(sent.map((c) => [Number(c.params.chat_id) - firstChat, c.at.getTime()]));
  const afterKill = pushedAt.flatMap((at, i) => (at > killedAt! ? [answerAt.get(i)!] : []));
  expect(afterKill.length, "messages that arrived after the kill").toBeGreaterThan(0);
  const times = sent.map((c) => c.at.getTime()).sort((a, b) => a - b);
  const figures = {
    messages,
    firstAnswerAfterKillMs: Math.min(...afterKill) - killedAt!,
    slowestAnswerMs: Math.max(...pushedAt.map((at, i) => answerAt.get(i)! - at)),
    longestPauseMs: Math.max(...times.slice(1).map((t, i) => t - times[i]!)),
  };
  const after = await options.master();
  expect(after.port).not.toBe(before.port);
  console.log(
    `${options.label}: master ${before.port} SIGKILLed, ${after.port} promoted; ` +
      `${figures.messages} messages; the first answer to a message sent after the kill ${figures.firstAnswerAfterKillMs} ms after it; ` +
      `longest pause between two answers ${figures.longestPauseMs} ms; slowest answer ${figures.slowestAnswerMs} ms`,
  );
  return figures;
}
