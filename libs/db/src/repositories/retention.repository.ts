import type pg from "pg";

/**
 * What the janitor prunes, in the order of a pass. `raw_events` empties the raw platform
 * event of an inbound message (the row stays, for dedupe and audit); the others delete rows.
 * Turns are history and are never pruned (compaction keeps the context small).
 */
export const RETENTION_TARGETS = [
  "lane_items",
  "lane_runs",
  "session_events",
  "deliveries",
  "inbound_messages",
  "inbound_quarantine",
  // After the deletes: a raw event is not emptied in a row about to go.
  "raw_events",
  "cron_runs",
] as const;
export type RetentionTarget = (typeof RETENTION_TARGETS)[number];

/**
 * One batch of each target: `$1` the cutoff, `$2` the batch size. A row's age counts from
 * its creation and from when it last changed (a requeued delivery, an item that waited in
 * a backlog): what reads its final state just after it finished still finds it. Only finished rows go:
 * open lane items and runs, unsent deliveries, unanswered events and an inbound message
 * whose lane item is still open all stay, whatever their age. `FOR UPDATE SKIP LOCKED`:
 * a row the hot path holds is left for the next batch instead of waited for, and the batch
 * never holds the hot path up. Each finds its rows through an index on its cutoff column
 * (migration 20261202030000_retention; deliveries' (status, created_at)).
 */
const PRUNE: Record<RetentionTarget, string> = {
  raw_events: `
    UPDATE inbound_messages SET raw = NULL WHERE id IN (
      SELECT id FROM inbound_messages WHERE raw IS NOT NULL AND received_at < $1
       ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  // An event whose lane item failed for good reads "failed" off that item (its own row still
  // says queued); the item's delete writes that onto the event, in the same statement.
  lane_items: `
    WITH gone AS (
      DELETE FROM lane_items WHERE id IN (
        SELECT id FROM lane_items WHERE created_at < $1 AND done_at < $1 AND status IN ('done', 'failed')
         ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
      RETURNING kind, ref_id, status, run_id, error, done_at),
    settled AS (
      UPDATE session_events e SET status = 'failed', run_id = g.run_id, error = coalesce(g.error, 'the run failed'), finished_at = g.done_at
        FROM gone g
       WHERE g.kind = 'agent_event' AND g.status = 'failed' AND e.status = 'queued'
         AND e.id = CASE WHEN g.ref_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN g.ref_id::uuid END)
    SELECT count(*)::int AS pruned FROM gone`,
  lane_runs: `
    DELETE FROM lane_runs WHERE id IN (
      SELECT id FROM lane_runs WHERE started_at < $1 AND status <> 'running'
       ORDER BY started_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  session_events: `
    DELETE FROM session_events WHERE id IN (
      SELECT id FROM session_events WHERE created_at < $1 AND coalesce(finished_at, created_at) < $1 AND status IN ('recorded', 'done', 'failed')
       ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  deliveries: `
    DELETE FROM deliveries WHERE id IN (
      SELECT id FROM deliveries WHERE created_at < $1 AND updated_at < $1 AND status IN ('sent', 'failed', 'expired')
       LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  inbound_messages: `
    DELETE FROM inbound_messages WHERE id IN (
      SELECT m.id FROM inbound_messages m
       WHERE m.received_at < $1
         AND NOT EXISTS (SELECT 1 FROM lane_items li WHERE li.kind = 'inbound' AND li.ref_id = m.id::text AND li.status IN ('pending', 'running'))
       ORDER BY m.received_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  inbound_quarantine: `
    DELETE FROM inbound_quarantine WHERE id IN (
      SELECT id FROM inbound_quarantine WHERE received_at < $1
       ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  // Each job's latest run stays: it is the job's "last run" in the API.
  cron_runs: `
    DELETE FROM cron_runs WHERE id IN (
      SELECT r.id FROM cron_runs r
       WHERE r.finished_at < $1 AND r.status IN ('succeeded', 'failed', 'skipped', 'missed')
         AND r.slot < (SELECT max(slot) FROM cron_runs m WHERE m.job_id = r.job_id)
       LIMIT $2 FOR UPDATE SKIP LOCKED)`,
};

const QUERY_TIMEOUT_MS = 120_000;

/** The statement that prunes one batch of `target` (`$1` cutoff, `$2` batch size). */
export const retentionStatement = (target: RetentionTarget): string => PRUNE[target];

/** The janitor's statements (services/scheduler, janitor.ts). */
export class RetentionRepository {
  constructor(private readonly pool: pg.Pool) {}

  /** Prunes at most `limit` rows of `target` older than `before`; returns how many it pruned. */
  async prune(target: RetentionTarget, before: Date, limit: number): Promise<number> {
    // A statement that hangs (Postgres cut off) ends, and the janitor's pass with it, instead
    // of holding its lease and its stop. pg reads `query_timeout` per query; its types do not say so.
    const query = { text: PRUNE[target], values: [before, limit], query_timeout: QUERY_TIMEOUT_MS } as pg.QueryConfig;
    const result = await this.pool.query<{ pruned?: number }>(query);
    return result.rows[0]?.pruned ?? result.rowCount ?? 0;
  }
}
