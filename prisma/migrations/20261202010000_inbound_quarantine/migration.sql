-- Events acknowledged but not storable as messages (docs/reliability.md).
CREATE TABLE "inbound_quarantine" (
    "id" UUID NOT NULL,
    "channel" TEXT NOT NULL,
    "account_id" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "raw" TEXT NOT NULL,
    "raw_digest" TEXT NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "inbound_quarantine_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "inbound_quarantine_channel_account_id_raw_digest_key" ON "inbound_quarantine"("channel", "account_id", "raw_digest");
CREATE INDEX "inbound_quarantine_received_at_idx" ON "inbound_quarantine"("received_at");
