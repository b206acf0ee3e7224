-- CreateTable
CREATE TABLE "sessions" (
    "id" UUID NOT NULL,
    "lane_key" TEXT NOT NULL,
    "chat_address" TEXT,
    "channel" TEXT,
    "parent_id" UUID,
    "title" TEXT,
    "status" TEXT NOT NULL DEFAULT 'active',
    "settings" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_activity_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "chats" (
    "address" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "current_session_id" UUID,
    "display_name" TEXT,
    "trigger_mode" TEXT NOT NULL DEFAULT 'mention',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "chats_pkey" PRIMARY KEY ("address")
);

-- CreateTable
CREATE TABLE "turns" (
    "id" UUID NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "session_id" UUID NOT NULL,
    "role" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "source" TEXT NOT NULL DEFAULT 'user',
    "inbound_message_id" UUID,
    "run_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "turns_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "inbound_messages" (
    "id" UUID NOT NULL,
    "channel" TEXT NOT NULL,
    "dedupe_key" TEXT NOT NULL,
    "platform_message_id" TEXT NOT NULL,
    "chat_address" TEXT NOT NULL,
    "message" JSONB NOT NULL,
    "raw" JSONB,
    "sent_at" TIMESTAMPTZ(3) NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "inbound_messages_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "deliveries" (
    "id" UUID NOT NULL,
    "target" TEXT NOT NULL,
    "message" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "platform_message_ids" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "sent_parts" INTEGER NOT NULL DEFAULT 0,
    "error" TEXT,
    "source" TEXT NOT NULL,
    "session_id" UUID,
    "inbound_message_id" UUID,
    "run_id" UUID,
    "idempotency_key" TEXT,
    "request_hash" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),
    "sent_at" TIMESTAMPTZ(3),

    CONSTRAINT "deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "lanes" (
    "key" TEXT NOT NULL,
    "last_seq" BIGINT NOT NULL DEFAULT 0,
    "mode" TEXT NOT NULL DEFAULT 'collect',
    "lease_owner" TEXT,
    "lease_token" UUID,
    "lease_expires_at" TIMESTAMPTZ(3),
    "retry_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "lanes_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "lane_items" (
    "id" UUID NOT NULL,
    "lane_key" TEXT NOT NULL,
    "seq" BIGINT NOT NULL,
    "kind" TEXT NOT NULL,
    "ref_id" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "run_id" UUID,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "done_at" TIMESTAMPTZ(3),

    CONSTRAINT "lane_items_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "lane_runs" (
    "id" UUID NOT NULL,
    "lane_key" TEXT NOT NULL,
    "worker_id" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'running',
    "item_count" INTEGER NOT NULL,
    "error" TEXT,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "lane_runs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "sessions_chat_address_idx" ON "sessions"("chat_address");

-- CreateIndex
CREATE INDEX "sessions_channel_last_activity_at_idx" ON "sessions"("channel", "last_activity_at");

-- CreateIndex
CREATE UNIQUE INDEX "turns_seq_key" ON "turns"("seq");

-- CreateIndex
CREATE INDEX "turns_session_id_seq_idx" ON "turns"("session_id", "seq");

-- CreateIndex
CREATE INDEX "inbound_messages_chat_address_received_at_idx" ON "inbound_messages"("chat_address", "received_at");

-- CreateIndex
CREATE UNIQUE INDEX "inbound_messages_channel_dedupe_key_key" ON "inbound_messages"("channel", "dedupe_key");

-- CreateIndex
CREATE INDEX "deliveries_status_created_at_idx" ON "deliveries"("status", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "deliveries_idempotency_key_key" ON "deliveries"("idempotency_key");

-- CreateIndex
CREATE INDEX "lane_items_lane_key_status_seq_idx" ON "lane_items"("lane_key", "status", "seq");

-- CreateIndex (partial; not expressible in schema.prisma): open items for the lane sweeper
CREATE INDEX "lane_items_open_created_at_idx" ON "lane_items"("created_at") WHERE "status" IN ('pending', 'running');

-- CreateIndex
CREATE UNIQUE INDEX "lane_items_lane_key_seq_key" ON "lane_items"("lane_key", "seq");

-- CreateIndex
CREATE UNIQUE INDEX "lane_items_kind_ref_id_key" ON "lane_items"("kind", "ref_id");

-- CreateIndex
CREATE INDEX "lane_runs_lane_key_started_at_idx" ON "lane_runs"("lane_key", "started_at");

-- AddForeignKey
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_parent_id_fkey" FOREIGN KEY ("parent_id") REFERENCES "sessions"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "chats" ADD CONSTRAINT "chats_current_session_id_fkey" FOREIGN KEY ("current_session_id") REFERENCES "sessions"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "turns" ADD CONSTRAINT "turns_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "turns" ADD CONSTRAINT "turns_inbound_message_id_fkey" FOREIGN KEY ("inbound_message_id") REFERENCES "inbound_messages"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "lane_items" ADD CONSTRAINT "lane_items_lane_key_fkey" FOREIGN KEY ("lane_key") REFERENCES "lanes"("key") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "lane_items" ADD CONSTRAINT "lane_items_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "lane_runs"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "lane_runs" ADD CONSTRAINT "lane_runs_lane_key_fkey" FOREIGN KEY ("lane_key") REFERENCES "lanes"("key") ON DELETE CASCADE ON UPDATE CASCADE;
