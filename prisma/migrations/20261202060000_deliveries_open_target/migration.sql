-- nahida: no-transaction
-- A delivery is claimed only once every earlier delivery to its chat has gone out; the claim
-- asks for the chat's earlier deliveries still queued or sending. Through the index on
-- (target, seq) it read every earlier delivery to the chat, sent ones included, so a claim
-- cost what the chat had ever been sent (within retention: a busy group's thousands). This
-- index holds the unsent ones only.
-- Built CONCURRENTLY, blocking no writes; every statement may run again.
DROP INDEX CONCURRENTLY IF EXISTS "deliveries_open_target_seq_idx";
CREATE INDEX CONCURRENTLY "deliveries_open_target_seq_idx" ON "deliveries" ("target", "seq") WHERE "status" IN ('queued', 'sending');
