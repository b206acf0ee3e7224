import type pg from "pg";

export interface PrefillResult {
  rows: number;
  ms: number;
  /** Bytes of the tables it filled, indexes included, afterwards. */
  bytes: number;
}

/** The tables traffic grows. */
export const LEDGER_TABLES = ["lanes", "sessions", "chats", "inbound_messages", "lane_items", "lane_runs", "deliveries", "turns"];

/**
 * Fills the ledger with about `rows` rows the way traffic leaves them, with generate_series:
 * per message an inbound row (its normalized message and raw event), a finished lane item
 * and run, a sent delivery and two turns, over chats and sessions of 50 messages each, all
 * `ageDays` old and older (one message a second back from there). None of it touches the
 * chats the bench talks to.
 */
export async function prefillLedger(pool: pg.Pool, o: { rows: number; ageDays: number; log: (line: string) => void }): Promise<PrefillResult> {
  const messages = Math.max(1, Math.floor(o.rows / 6));
  const sessions = Math.max(1, Math.floor(messages / 50));
  const t0 = Date.now();
  const client = await pool.connect();
  try {
    // Only this session's commits: the bench's data is not worth an fsync each.
    await client.query("SET synchronous_commit = off");
    const at = `now() - interval '${o.ageDays} days' - g * interval '1 second'`;
    const chat = (n: string) => `'telegram:private:' || (500000000 + ${n})`;
    const step = async (what: string, sql: string, values: unknown[]) => {
      const s0 = Date.now();
      const result = await client.query(sql, values);
      o.log(`    ${what}: ${result.rowCount} rows in ${((Date.now() - s0) / 1000).toFixed(1)} s`);
    };
    await step("lanes", `INSERT INTO lanes (key) SELECT 'prefill:' || g FROM generate_series(1, $1) g`, [sessions]);
    await step(
      "sessions",
      `INSERT INTO sessions (id, lane_key, chat_address, channel, created_at, last_activity_at)
       SELECT md5('s' || g)::uuid, 'prefill:' || g, ${chat("g")}, 'telegram', ${at}, ${at} FROM generate_series(1, $1) g`,
      [sessions],
    );
    await step(
      "chats",
      `INSERT INTO chats (address, channel, current_session_id, display_name) SELECT ${chat("g")}, 'telegram', md5('s' || g)::uuid, 'Prefill ' || g FROM generate_series(1, $1) g`,
      [sessions],
    );
    await step(
      "inbound_messages",
      `INSERT INTO inbound_messages (id, channel, dedupe_key, platform_message_id, chat_address, message, raw, sent_at, received_at, routed_at)
       SELECT md5('m' || g)::uuid, 'telegram', '7000000001:' || (1000000000 + g), g::text, ${chat("1 + g % $2")},
              jsonb_build_object('message', jsonb_build_object('messageId', g::text, 'text', 'a message of the prefilled ledger, number ' || g, 'sender', jsonb_build_object('id', (500000000 + 1 + g % $2)::text, 'name', 'Prefill', 'username', 'prefill')), 'context', jsonb_build_object('chat', ${chat("1 + g % $2")}, 'chatType', 'private')),
              jsonb_build_object('update_id', 1000000000 + g, 'message', jsonb_build_object('message_id', g, 'date', 1760000000 + g, 'text', 'a message of the prefilled ledger, number ' || g, 'chat', jsonb_build_object('id', 500000000 + 1 + g % $2, 'type', 'private', 'first_name', 'Prefill'), 'from', jsonb_build_object('id', 500000000 + 1 + g % $2, 'is_bot', false, 'first_name', 'Prefill', 'language_code', 'en'))),
              ${at}, ${at}, ${at}
         FROM generate_series(1, $1) g`,
      [messages, sessions],
    );
    await step(
      "lane_items",
      `INSERT INTO lane_items (id, lane_key, seq, kind, ref_id, status, run_id, attempts, created_at, done_at)
       SELECT md5('i' || g)::uuid, 'prefill:' || (1 + g % $2), g, 'inbound', md5('m' || g)::uuid::text, 'done', md5('r' || g)::uuid, 1, ${at}, ${at} FROM generate_series(1, $1) g`,
      [messages, sessions],
    );
    await step(
      "lane_runs",
      `INSERT INTO lane_runs (id, lane_key, worker_id, status, item_count, started_at, finished_at)
       SELECT md5('r' || g)::uuid, 'prefill:' || (1 + g % $2), 'prefill', 'succeeded', 1, ${at}, ${at} FROM generate_series(1, $1) g`,
      [messages, sessions],
    );
    await step(
      "deliveries",
      `INSERT INTO deliveries (id, target, message, status, attempts, platform_message_ids, sent_parts, source, session_id, inbound_message_id, created_at, updated_at, sent_at)
       SELECT md5('d' || g)::uuid, ${chat("1 + g % $2")}, jsonb_build_object('target', ${chat("1 + g % $2")}, 'text', 'the answer to message ' || g), 'sent', 1, ARRAY[g::text], 1, 'agent',
              md5('s' || (1 + g % $2))::uuid, md5('m' || g)::uuid, ${at}, ${at}, ${at}
         FROM generate_series(1, $1) g`,
      [messages, sessions],
    );
    await step(
      "turns",
      `INSERT INTO turns (id, session_id, role, content, metadata, source, inbound_message_id, created_at)
       SELECT md5('t' || g)::uuid, md5('s' || (1 + (g / 2) % $2))::uuid, CASE WHEN g % 2 = 0 THEN 'user' ELSE 'assistant' END,
              CASE WHEN g % 2 = 0 THEN 'a message of the prefilled ledger, number ' || g ELSE 'the answer to message ' || g END,
              '{}', CASE WHEN g % 2 = 0 THEN 'user' ELSE 'agent' END, md5('m' || (g / 2))::uuid, ${at}
         FROM generate_series(1, $1) g`,
      [2 * messages, sessions],
    );
    // What autovacuum and the checkpointer do after a load like this, done now: measured
    // afterwards, the hot path would compete with them for the disk and the cores.
    const a0 = Date.now();
    await client.query(`VACUUM (ANALYZE) ${LEDGER_TABLES.join(", ")}`);
    await client.query("CHECKPOINT");
    o.log(`    VACUUM (ANALYZE), CHECKPOINT: ${((Date.now() - a0) / 1000).toFixed(1)} s`);
    const { rows } = await client.query<{ bytes: string }>(`SELECT sum(pg_total_relation_size(t::regclass))::text AS bytes FROM unnest($1::text[]) t`, [LEDGER_TABLES]);
    return { rows: 6 * messages + 3 * sessions, ms: Date.now() - t0, bytes: Number(rows[0]!.bytes) };
  } finally {
    await client.query("RESET synchronous_commit").catch(() => undefined);
    client.release();
  }
}
