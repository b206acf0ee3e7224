// End-to-end latency of the Telegram pipeline in one process (npm start's composition):
// fake Telegram update → ingress (long poll) → inbound → lane → agent run (fake LLM that
// answers at once) → delivery → fake Telegram sendMessage. Prints p50/p95/max and msg/s.
//   npm run bench:pipeline -- [messages=300] [chats=50] [ratePerSecond=50]
import { startHarness } from "../test/support/nahida-harness";

const [messages = 300, chats = 50, rate = 50] = process.argv.slice(2).map(Number);
const h = await startHarness("bench_pipeline", { LOG_LEVEL: "error" });
h.openai.onRequest(() => ({ content: "ok" }));

// Warm-up: the first messages pay for connections, JIT and Prisma's query-plan cache.
for (let i = 0; i < 20; i++) {
  const chat = 799000000 + i;
  h.telegram.pushUpdate({ message: { message_id: 1, from: { id: chat, is_bot: false, first_name: "W" }, chat: { id: chat, type: "private", first_name: "W" }, date: 1778400180, text: "warm-up" } });
}
while (h.telegram.callsTo("sendMessage").length < 20) await new Promise((r) => setTimeout(r, 20));
h.telegram.reset();
await h.nahida.db.pool.query("TRUNCATE inbound_messages, lane_items, lane_runs, deliveries, turns CASCADE");

const pushedAt = new Map<string, number>();
const t0 = Date.now();
for (let i = 0; i < messages; i++) {
  const chat = 800000000 + (i % chats);
  const text = `m${i}`;
  pushedAt.set(text, Date.now());
  h.telegram.pushUpdate({
    message: { message_id: i + 1, from: { id: chat, is_bot: false, first_name: "B" }, chat: { id: chat, type: "private", first_name: "B" }, date: 1778400180, text },
  });
  const due = t0 + ((i + 1) * 1000) / rate;
  if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
}

// Each reply answers the newest message of its batch; a batch's latency counts for all its messages.
const deadline = Date.now() + 120_000;
const answered = new Set<string>();
const latencies: number[] = [];
while (answered.size < messages && Date.now() < deadline) {
  const requests = h.openai.requests;
  for (const [, req] of requests.entries()) {
    const body = req.body.messages as { role: string; content: string }[];
    for (const m of body.filter((x) => x.role === "user")) {
      const text = m.content.split("\n").at(-1)!;
      if (!answered.has(text) && pushedAt.has(text)) {
        answered.add(text);
      }
    }
  }
  await new Promise((r) => setTimeout(r, 50));
}
const sends = h.telegram.callsTo("sendMessage");
const perChatSends = new Map<string, number[]>();
for (const s of sends) perChatSends.set(String(s.params.chat_id), [...(perChatSends.get(String(s.params.chat_id)) ?? []), s.at.getTime()]);
for (let i = 0; i < messages; i++) {
  const chat = String(800000000 + (i % chats));
  const pushed = pushedAt.get(`m${i}`)!;
  const reply = perChatSends.get(chat)?.find((at) => at >= pushed);
  if (reply !== undefined) latencies.push(reply - pushed);
}
latencies.sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN;
const elapsed = (Math.max(...sends.map((s) => s.at.getTime())) - t0) / 1000;
console.log(
  `pipeline: ${messages} messages over ${chats} chats at ${rate}/s: ${sends.length} replies (batched per chat), ` +
    `message→reply p50 ${pct(50)} ms, p95 ${pct(95)} ms, max ${latencies.at(-1)} ms, ${(messages / elapsed).toFixed(0)} msg/s`,
);
// Where the time goes, from the ledger's own timestamps (averages over all messages).
const { rows } = await h.nahida.db.pool.query<Record<string, number>>(`
  SELECT avg(extract(epoch FROM li.created_at - i.received_at) * 1000)::int AS "inbound→lane",
         avg(extract(epoch FROM lr.started_at - li.created_at) * 1000)::int AS "lane→run start",
         avg(extract(epoch FROM lr.finished_at - lr.started_at) * 1000)::int AS "run",
         avg(extract(epoch FROM d.sent_at - lr.finished_at) * 1000)::int AS "run→sent"
    FROM inbound_messages i
    JOIN lane_items li ON li.ref_id = i.id::text
    JOIN lane_runs lr ON lr.id = li.run_id
    JOIN deliveries d ON d.run_id = lr.id`);
console.log(`stages (avg ms): ${Object.entries(rows[0] ?? {}).map(([k, v]) => `${k} ${v}`).join(", ")}`);
await h.close();
process.exit(0);
