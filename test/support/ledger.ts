import pg from "pg";
import { waitFor } from "./infra";

/**
 * Waits until the ledger has nothing left to do: no lane item open, no delivery queued or
 * sending. Every send the system will make is then behind a `sent` row (a row is marked
 * sent after the platform accepted it), so a test can count what a platform received
 * against the rows instead of sleeping to prove that nothing more comes.
 */
export async function ledgerSettled(databaseUrl: string, timeoutMs = 15_000): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await waitFor(
      async () => {
        const { rows } = await db.query<{ open: number }>(
          `SELECT ((SELECT count(*) FROM lane_items WHERE status IN ('pending', 'running'))
                 + (SELECT count(*) FROM deliveries WHERE status IN ('queued', 'sending')))::int AS open`,
        );
        return rows[0]!.open === 0;
      },
      timeoutMs,
      "no open lane item and no queued or sending delivery",
    );
  } finally {
    await db.end();
  }
}

/** Deliveries to `target` by status. */
export async function deliveriesTo(databaseUrl: string, target: string): Promise<Record<string, number>> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM deliveries WHERE target = $1 GROUP BY status", [target]);
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  } finally {
    await db.end();
  }
}

/**
 * A long conversation written straight into a session's history: `count` turns from number
 * `from`, alternately a user message (with its envelope: time, channel, sender, and role
 * tags that change at turn 100) and an answer of about 600 characters each, an hour apart.
 */
export async function prefillTurns(db: Pick<pg.Pool, "query">, sessionId: string, count: number, from = 0): Promise<void> {
  await db.query(
    `INSERT INTO turns (id, session_id, role, content, metadata, source, created_at)
     SELECT gen_random_uuid(), $1::uuid,
            CASE WHEN i % 2 = 0 THEN 'user' ELSE 'assistant' END,
            CASE WHEN i % 2 = 0 THEN 'question ' || i || ': ' || repeat('what about the deploy window? ', 20)
                 ELSE 'answer ' || i || ': ' || repeat('the window is on friday. ', 20) END,
            CASE WHEN i % 2 = 0 THEN jsonb_build_object('message_context', jsonb_build_object(
                   'timestamp', to_char(timestamptz '2026-11-01 00:00Z' + i * interval '1 hour', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                   'channel', 'telegram', 'chatType', 'private', 'senderLabel', 'Alice (@alice)',
                   'roles', CASE WHEN i < 100 THEN '[]'::jsonb ELSE '["admin"]'::jsonb END))
                 ELSE '{}'::jsonb END,
            CASE WHEN i % 2 = 0 THEN 'user' ELSE 'agent' END,
            timestamptz '2026-11-01 00:00Z' + i * interval '1 hour'
       FROM generate_series($2::int, $2::int + $3::int - 1) AS i ORDER BY i`,
    [sessionId, from, count],
  );
}

/** The seven sections a compaction summary must have, each with a line under it. */
export const TEST_SUMMARY = ["Time range", "Channel and chat", "Participants", "Identity changes", "Decisions", "Open questions", "Identifiers"]
  .map((s) => `## ${s}\n${s === "Identifiers" ? "ticket NAH-4711" : "as discussed"}`)
  .join("\n");

/** Whether a chat completion request is the compaction summarizer's. */
export const isSummaryRequest = (body: { messages: unknown[] }) => String((body.messages[0] as { content?: unknown }).content ?? "").startsWith("You compact a chat conversation");
