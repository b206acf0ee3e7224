// The cost of one message as a session's stored history grows (issue 22, docs/compaction.md):
// Postgres statements, bytes read from Postgres and CPU of the (all-in-one) process per
// message, for sessions of 10, 1,000 and 10,000 stored turns, in one run. The 10-turn session
// is the baseline. A long session is compacted once before it is measured (its first message),
// as it would have been while it grew.
//   npm run bench:history -- [--messages 40]
import { parseArgs } from "node:util";
import pg from "pg";
import { startHarness } from "../test/support/nahida-harness";

const { values: args } = parseArgs({ options: { messages: { type: "string", default: "40" } } });
const MESSAGES = Number(args.messages);
const SIZES = [10, 1_000, 10_000];

// Every statement and every byte the process reads from Postgres, whoever sends it (Prisma's
// adapter and the repositories' direct queries both go through pg.Client).
const counted = { statements: 0 };
const sockets = new Set<{ bytesRead: number }>();
const clientQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client & { connection?: { stream?: { bytesRead: number } } }, ...args: unknown[]) {
  counted.statements++;
  const stream = this.connection?.stream;
  if (stream) sockets.add(stream);
  return (clientQuery as (...a: unknown[]) => unknown).apply(this, args);
} as typeof clientQuery;
const bytesRead = () => [...sockets].reduce((n, s) => n + s.bytesRead, 0);

const SUMMARY = ["Time range", "Channel and chat", "Participants", "Identity changes", "Decisions", "Open questions", "Identifiers"].map((s) => `## ${s}\nnone`).join("\n");
const h = await startHarness("bench_history", { LOG_LEVEL: "error" });
h.openai.onRequest((request) => ({ content: String((request.body.messages[0] as { content: string }).content).startsWith("You compact") ? SUMMARY : "ok" }));
const direct = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });

let sent = 0;
async function talk(chat: number, text: string): Promise<void> {
  const want = h.telegram.sent(chat).length + 1;
  h.telegram.pushUpdate({ message: { message_id: ++sent, from: { id: chat, is_bot: false, first_name: "B" }, chat: { id: chat, type: "private", first_name: "B" }, date: 1778400180, text } });
  while (h.telegram.sent(chat).length < want) await new Promise((r) => setTimeout(r, 2));
}

/** `count` stored turns of a chat's session, like a long conversation: a question and an answer of ~250 characters each. */
async function prefill(chat: number, count: number): Promise<void> {
  const { rows } = await direct.query<{ id: string }>("SELECT current_session_id AS id FROM chats WHERE address = $1", [`telegram:private:${chat}`]);
  await direct.query(
    `INSERT INTO turns (id, session_id, role, content, metadata, source, created_at)
     SELECT gen_random_uuid(), $1::uuid, CASE WHEN i % 2 = 0 THEN 'user' ELSE 'assistant' END,
            CASE WHEN i % 2 = 0 THEN 'question ' || i || ' ' || repeat('about the deploy ', 14) ELSE 'answer ' || i || ' ' || repeat('on friday at noon ', 14) END,
            CASE WHEN i % 2 = 0 THEN jsonb_build_object('message_context', jsonb_build_object('timestamp', '2026-11-01T00:00:00Z', 'channel', 'telegram', 'chatType', 'private', 'senderLabel', 'B', 'roles', '[]'::jsonb)) ELSE '{}'::jsonb END,
            CASE WHEN i % 2 = 0 THEN 'user' ELSE 'agent' END, timestamptz '2026-11-01' + i * interval '1 minute'
       FROM generate_series(1, $2::int) AS i ORDER BY i`,
    [rows[0]!.id, count],
  );
}

const results: { size: number; statements: number; kib: number; cpuUs: number; wallMs: number; compactions: number }[] = [];
try {
  // Warm-up: connections, JIT, statement caches.
  for (let i = 0; i < 20; i++) await talk(880000000, `warm-up ${i}`);
  for (const size of SIZES) {
    const chat = 881000000 + size;
    await talk(chat, "hello");
    await prefill(chat, size - 2);
    await talk(chat, "first message on the long history"); // compacts a long session once
    const before = { statements: counted.statements, bytes: bytesRead(), cpu: process.cpuUsage(), at: performance.now() };
    for (let i = 0; i < MESSAGES; i++) await talk(chat, `message ${i}`);
    const cpu = process.cpuUsage(before.cpu);
    const { rows } = await direct.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM session_compactions k JOIN chats c ON c.current_session_id = k.session_id WHERE c.address = $1",
      [`telegram:private:${chat}`],
    );
    results.push({
      size,
      statements: (counted.statements - before.statements) / MESSAGES,
      kib: (bytesRead() - before.bytes) / 1024 / MESSAGES,
      cpuUs: (cpu.user + cpu.system) / MESSAGES,
      wallMs: (performance.now() - before.at) / MESSAGES,
      compactions: rows[0]!.n,
    });
  }
  const base = results[0]!;
  console.log(`history length vs cost per message, ${MESSAGES} messages each, one at a time (all services in this process):`);
  console.log("  stored turns | statements | KiB read from Postgres | process CPU µs | wall ms | checkpoints | vs 10 turns (KiB, CPU)");
  for (const r of results) {
    console.log(
      `  ${String(r.size).padStart(12)} | ${r.statements.toFixed(1).padStart(10)} | ${r.kib.toFixed(1).padStart(22)} | ${r.cpuUs.toFixed(0).padStart(13)} | ${r.wallMs.toFixed(1).padStart(7)} | ${String(r.compactions).padStart(11)} | ×${(r.kib / base.kib).toFixed(2)}, ×${(r.cpuUs / base.cpuUs).toFixed(2)}`,
    );
  }
} finally {
  await direct.end();
  await h.close();
}
process.exit(0);
