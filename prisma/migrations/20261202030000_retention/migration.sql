-- nahida: no-transaction
-- What the retention janitor needs (docs/scaling.md, "Data lifecycle"), added while the
-- hot path keeps writing: CREATE INDEX CONCURRENTLY takes no lock that blocks inserts or
-- updates, and cannot run inside a transaction. Every statement may run again: a failed
-- CONCURRENTLY build leaves an invalid index behind, which the DROP before it removes.

-- Dropping a foreign key locks both its tables for an instant, once it has the lock; waiting
-- for it (behind a backup's long read) would stop every write meanwhile, so it waits 2 s at
-- most, and the runner tries the migration again (every statement here may run twice).
SET lock_timeout = '2s';
-- A turn keeps the id of the inbound message it answered, and a lane item the id of its run,
-- after the janitor deleted those rows: without the foreign keys a delete needs no scan of
-- turns (kept for good) or of lane_items for referencing rows, and no index for one.
ALTER TABLE "turns" DROP CONSTRAINT IF EXISTS "turns_inbound_message_id_fkey";
ALTER TABLE "lane_items" DROP CONSTRAINT IF EXISTS "lane_items_run_id_fkey";
-- The index builds wait for older transactions, however long: they block no writes.
RESET lock_timeout;

DROP INDEX CONCURRENTLY IF EXISTS "inbound_messages_received_at_idx";
CREATE INDEX CONCURRENTLY "inbound_messages_received_at_idx" ON "inbound_messages" ("received_at");
-- The raw events still kept: a pass that clears them skips the ones cleared before.
DROP INDEX CONCURRENTLY IF EXISTS "inbound_messages_raw_kept_idx";
CREATE INDEX CONCURRENTLY "inbound_messages_raw_kept_idx" ON "inbound_messages" ("received_at") WHERE "raw" IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS "lane_items_created_at_idx";
CREATE INDEX CONCURRENTLY "lane_items_created_at_idx" ON "lane_items" ("created_at");
DROP INDEX CONCURRENTLY IF EXISTS "lane_runs_started_at_idx";
CREATE INDEX CONCURRENTLY "lane_runs_started_at_idx" ON "lane_runs" ("started_at");
DROP INDEX CONCURRENTLY IF EXISTS "session_events_created_at_idx";
CREATE INDEX CONCURRENTLY "session_events_created_at_idx" ON "session_events" ("created_at");
DROP INDEX CONCURRENTLY IF EXISTS "cron_runs_finished_at_idx";
CREATE INDEX CONCURRENTLY "cron_runs_finished_at_idx" ON "cron_runs" ("finished_at");
