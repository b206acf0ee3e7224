-- History compaction checkpoints (docs/compaction.md): a summary of a session's turns up to a
-- cut. Nothing is deleted: the context is the newest checkpoint and the turns after its cut.
CREATE TABLE "session_compactions" (
    "id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "from_seq" BIGINT NOT NULL,
    "through_seq" BIGINT NOT NULL,
    "covered_turns" INTEGER NOT NULL,
    "summary" TEXT NOT NULL,
    "facts" JSONB NOT NULL,
    "tokens_before" INTEGER NOT NULL,
    "tokens_after" INTEGER NOT NULL,
    "model" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "run_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "session_compactions_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "session_compactions_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE UNIQUE INDEX "session_compactions_session_id_through_seq_key" ON "session_compactions"("session_id", "through_seq");
