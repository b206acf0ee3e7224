-- Cross-session messaging: per-chat send override, agent events, policy documents.
ALTER TABLE "chats" ADD COLUMN "send_policy" TEXT;

CREATE TABLE "session_events" (
    "id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "source" TEXT NOT NULL,
    "from_session_id" UUID,
    "content" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "depth" INTEGER NOT NULL,
    "status" TEXT NOT NULL,
    "reply" TEXT,
    "error" TEXT,
    "run_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "session_events_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "session_events_session_id_created_at_idx" ON "session_events"("session_id", "created_at");
ALTER TABLE "session_events" ADD CONSTRAINT "session_events_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE TABLE "policies" (
    "name" TEXT NOT NULL,
    "document" JSONB NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "policies_pkey" PRIMARY KEY ("name")
);
