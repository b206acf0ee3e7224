-- The ingress routes a message in the statement that stores it (routed_at = now()), and the
-- agent worker's inbound sweeper, the one reader of this index, is gone.
DROP INDEX IF EXISTS "inbound_messages_unrouted_received_at_idx";
