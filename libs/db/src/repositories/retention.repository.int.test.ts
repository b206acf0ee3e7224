import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../../test/support/infra";
import { RETENTION_TARGETS, RetentionRepository, retentionStatement, type RetentionTarget } from "./retention.repository";

const DAY = 86_400_000;
const OLD = new Date(Date.now() - 40 * DAY);
const NEW = new Date(Date.now() - 1 * DAY);
const CUTOFF = new Date(Date.now() - 30 * DAY);

describe("RetentionRepository (real Postgres)", () => {
  let t: TestDatabase;
  let retention: RetentionRepository;
  const q = (sql: string, values: unknown[] = []) => t.db.pool.query(sql, values);
  const ids = async (table: string) => (await q(`SELECT id::text FROM ${table} ORDER BY id`)).rows.map((r) => r.id as string).sort();
  /** Prunes `target` in batches of `limit` until a batch comes back short; the batch sizes. */
  const drain = async (target: RetentionTarget, limit = 2) => {
    const batches: number[] = [];
    for (;;) {
      const n = await retention.prune(target, CUTOFF, limit);
      batches.push(n);
      if (n < limit) return batches;
    }
  };

  beforeAll(async () => {
    t = await createTestDatabase("retention");
    retention = new RetentionRepository(t.db.pool);
    await q(`INSERT INTO lanes (key) VALUES ('chat:a')`);
    await q(`INSERT INTO sessions (id, lane_key) VALUES ('00000000-0000-4000-8000-00000000000a', 'chat:a')`);
  });
  afterAll(async () => t?.drop());

  it("deletes old inbound messages in batches, keeps one whose lane item is open, and the turns that recorded them", async () => {
    const inbound = (id: string, at: Date) =>
      q(
        `INSERT INTO inbound_messages (id, channel, dedupe_key, platform_message_id, chat_address, message, raw, sent_at, received_at)
         VALUES ($1::uuid, 'telegram', $1::text, $1::text, 'telegram:private:1', '{}', '{"update_id": 1}', $2, $2)`,
        [id, at],
      );
    const [old1, old2, old3, open, fresh] = ["1", "2", "3", "4", "5"].map((n) => `00000000-0000-4000-8000-00000000010${n}`);
    for (const id of [old1!, old2!, old3!, open!]) await inbound(id, OLD);
    await inbound(fresh!, NEW);
    await q(`INSERT INTO lane_items (id, lane_key, seq, kind, ref_id, status) VALUES (gen_random_uuid(), 'chat:a', 1, 'inbound', $1, 'pending')`, [open]);
    await q(`INSERT INTO turns (id, session_id, role, content, inbound_message_id) VALUES (gen_random_uuid(), '00000000-0000-4000-8000-00000000000a', 'user', 'hi', $1)`, [old1]);

    expect(await drain("raw_events")).toEqual([2, 2, 0]);
    expect((await q(`SELECT count(*)::int AS n FROM inbound_messages WHERE raw IS NOT NULL`)).rows[0].n).toBe(1);

    expect(await drain("inbound_messages")).toEqual([2, 1]);
    expect(await ids("inbound_messages")).toEqual([open, fresh].sort());
    // The turn is history: it stays, with the id of the message it recorded.
    expect((await q(`SELECT inbound_message_id::text AS id FROM turns`)).rows).toEqual([{ id: old1 }]);
  });

  it("deletes finished lane items and runs, never open ones", async () => {
    await q(`DELETE FROM lane_items`);
    const item = (seq: number, status: string, at: Date, run: string | null = null) =>
      q(
        `INSERT INTO lane_items (id, lane_key, seq, kind, ref_id, status, created_at, done_at, run_id)
         VALUES (gen_random_uuid(), 'chat:a', $1, 'agent_event', $2, $3, $4, CASE WHEN $3 IN ('done', 'failed') THEN $4::timestamptz END, $5)`,
        [seq, String(seq), status, at, run],
      );
    const run = (id: string, status: string, at: Date) =>
      q(`INSERT INTO lane_runs (id, lane_key, worker_id, status, item_count, started_at) VALUES ($1, 'chat:a', 'w', $2, 1, $3)`, [id, status, at]);
    const [r1, r2, r3] = ["1", "2", "3"].map((n) => `00000000-0000-4000-8000-00000000020${n}`);
    await run(r1!, "succeeded", OLD);
    await run(r2!, "running", OLD);
    await run(r3!, "failed", NEW);
    await item(10, "done", OLD, r1!);
    await item(11, "failed", OLD, r1!);
    await item(12, "pending", OLD, r1!);
    await item(13, "running", OLD, r2!);
    await item(14, "done", NEW, r3!);

    // An event whose item failed for good: its row still says queued, the item says failed.
    const event = "00000000-0000-4000-8000-0000000002e1";
    await q(
      `INSERT INTO session_events (id, session_id, source, content, mode, depth, status, created_at) VALUES ($1, '00000000-0000-4000-8000-00000000000a', 'api:x', 'hi', 'enqueue', 1, 'queued', $2)`,
      [event, OLD],
    );
    await q(
      `INSERT INTO lane_items (id, lane_key, seq, kind, ref_id, status, error, created_at, done_at, run_id) VALUES (gen_random_uuid(), 'chat:a', 15, 'agent_event', $1, 'failed', 'gave up', $2, $2, $3)`,
      [event, OLD, r1],
    );
    // Finished 40 days ago, but requeued and done again yesterday: not old yet.
    await q(`INSERT INTO lane_items (id, lane_key, seq, kind, ref_id, status, created_at, done_at) VALUES (gen_random_uuid(), 'chat:a', 16, 'agent_event', '16', 'done', $1, $2)`, [OLD, NEW]);

    expect(await drain("lane_items")).toEqual([2, 1]);
    expect((await q(`SELECT seq::int FROM lane_items ORDER BY seq`)).rows.map((r) => r.seq)).toEqual([12, 13, 14, 16]);
    // Its item gone, the event itself says how it ended.
    expect((await q(`SELECT status, error, run_id::text AS run FROM session_events WHERE id = $1`, [event])).rows).toEqual([{ status: "failed", error: "gave up", run: r1 }]);
    // A run goes with its age, whatever items still name it (they keep its id).
    expect(await drain("lane_runs")).toEqual([1]);
    expect(await ids("lane_runs")).toEqual([r2, r3].sort());
  });

  it("deletes finished deliveries and answered events; unsent and unanswered ones stay", async () => {
    for (const [status, at] of [["sent", OLD], ["failed", OLD], ["expired", OLD], ["queued", OLD], ["sending", OLD], ["sent", NEW]] as const) {
      await q(`INSERT INTO deliveries (id, target, message, status, source, created_at, updated_at) VALUES (gen_random_uuid(), 'telegram:private:1', '{}', $1, 'api', $2, $2)`, [status, at]);
    }
    expect(await drain("deliveries")).toEqual([2, 1]);
    expect((await q(`SELECT status FROM deliveries ORDER BY status`)).rows.map((r) => r.status)).toEqual(["queued", "sending", "sent"]);

    await q(`DELETE FROM session_events`);
    let n = 0;
    for (const [status, at] of [["recorded", OLD], ["done", OLD], ["failed", OLD], ["queued", OLD], ["done", NEW]] as const) {
      await q(
        `INSERT INTO session_events (id, session_id, source, content, mode, depth, status, created_at)
         VALUES ($1, '00000000-0000-4000-8000-00000000000a', 'api:x', 'hello', 'enqueue', 1, $2, $3)`,
        [`00000000-0000-4000-8000-00000000030${n++}`, status, at],
      );
    }
    expect(await drain("session_events")).toEqual([2, 1]);
    expect((await q(`SELECT status FROM session_events ORDER BY status`)).rows.map((r) => r.status)).toEqual(["done", "queued"]);
  });

  it("deletes old quarantined events and finished cron runs, keeping each job's latest run", async () => {
    for (const [digest, at] of [["a", OLD], ["b", NEW]] as const) {
      await q(`INSERT INTO inbound_quarantine (id, channel, account_id, reason, raw, raw_digest, received_at) VALUES (gen_random_uuid(), 'telegram', '1', 'bad', '{}', $1, $2)`, [digest, at]);
    }
    expect(await drain("inbound_quarantine")).toEqual([1]);
    expect((await q(`SELECT raw_digest FROM inbound_quarantine`)).rows).toEqual([{ raw_digest: "b" }]);

    const job = "00000000-0000-4000-8000-000000000401";
    await q(
      `INSERT INTO cron_jobs (id, name, schedule, tz, anchor_at, target, payload, owner)
       VALUES ($1, 'j', '{"kind":"every","every_ms":60000}', 'UTC', now(), 'telegram:private:1', '{"kind":"notify","text":"x"}', 'token:x')`,
      [job],
    );
    for (const [minutes, status] of [[3, "succeeded"], [2, "failed"], [1, "running"], [0, "succeeded"]] as const) {
      const slot = new Date(OLD.getTime() + minutes * 60_000);
      await q(`INSERT INTO cron_runs (id, job_id, slot, kind, status, finished_at) VALUES (gen_random_uuid(), $1, $2, 'notify', $3, $2)`, [job, slot, status]);
    }
    expect(await drain("cron_runs")).toEqual([2, 0]);
    // The latest (minute 3) stays though old; the running one is not finished.
    expect((await q(`SELECT status FROM cron_runs ORDER BY slot`)).rows.map((r) => r.status)).toEqual(["running", "succeeded"]);
  });

  it("finds each target's rows through an index, never a scan of the whole table", async () => {
    const client = await t.db.pool.connect();
    try {
      // With sequential scans priced out, a plan still shows one only where no index serves.
      await client.query("SET enable_seqscan = off");
      for (const target of RETENTION_TARGETS) {
        const plan = (await client.query(`EXPLAIN ${retentionStatement(target)}`, [CUTOFF, 1000])).rows.map((r) => r["QUERY PLAN"] as string).join("\n");
        expect(plan, target).not.toMatch(/Seq Scan/);
      }
    } finally {
      await client.query("RESET enable_seqscan");
      client.release();
    }
  });
});
