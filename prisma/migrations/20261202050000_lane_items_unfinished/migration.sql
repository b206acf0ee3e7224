-- nahida: no-transaction
-- The sweeper's and the gauges' index of unfinished lane items, asked for as `done_at IS
-- NULL` instead of `status IN ('pending', 'running')` (the same items: every status that
-- ends an item sets done_at). A statement of one lane asks for its open items by status; it
-- could take the old index, and did on a ledger of millions of finished items, whose
-- statistics say nothing is open: it read every lane's open items, three times per claim
-- (bench:ledger, 850 per claim during a burst). No statement of one lane implies
-- `done_at IS NULL`, so the planner cannot take this index for them.
-- The old index goes in the same step, since while it exists the planner may still take it
-- for a lane's statements. Workers of the release before this one, still running during a
-- rolling update, sweep and count by status without an index until they are replaced.
-- Built CONCURRENTLY, blocking no writes; every statement may run again.
DROP INDEX CONCURRENTLY IF EXISTS "lane_items_unfinished_created_at_idx";
CREATE INDEX CONCURRENTLY "lane_items_unfinished_created_at_idx" ON "lane_items" ("created_at") WHERE "done_at" IS NULL;
DROP INDEX CONCURRENTLY IF EXISTS "lane_items_open_created_at_idx";
