-- AlterTable
ALTER TABLE "inbound_messages" ADD COLUMN "routed_at" TIMESTAMPTZ(3);

-- Existing rows were routed by the queue before this column existed.
UPDATE "inbound_messages" SET "routed_at" = "received_at";

-- CreateIndex (partial; not expressible in schema.prisma): unrouted messages for the inbound sweeper
CREATE INDEX "inbound_messages_unrouted_received_at_idx" ON "inbound_messages"("received_at") WHERE "routed_at" IS NULL;
