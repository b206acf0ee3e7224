-- Sub-agents: the background task ledger (docs/subagents.md).
CREATE TABLE "background_tasks" (
    "id" UUID NOT NULL,
    "parent_session_id" UUID NOT NULL,
    "parent_lane_key" TEXT NOT NULL,
    "spawn_item_id" UUID NOT NULL,
    "parent_run_id" UUID NOT NULL,
    "adopted" BOOLEAN NOT NULL DEFAULT false,
    "child_session_id" UUID NOT NULL,
    "task" TEXT NOT NULL,
    "label" TEXT,
    "instructions" TEXT,
    "context_mode" TEXT NOT NULL,
    "fork_context" TEXT,
    "tools" JSONB,
    "depth" INTEGER NOT NULL DEFAULT 1,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "result" TEXT,
    "error" TEXT,
    "timeout_ms" INTEGER NOT NULL,
    "deadline_at" TIMESTAMPTZ(3),
    "traceparent" TEXT,
    "yield_id" UUID,
    "consumed_by" TEXT,
    "consumed_run_id" UUID,
    "consumed_at" TIMESTAMPTZ(3),
    "input_tokens" INTEGER NOT NULL DEFAULT 0,
    "output_tokens" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "background_tasks_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "background_tasks_child_session_id_key" ON "background_tasks"("child_session_id");
CREATE INDEX "background_tasks_parent_session_id_created_at_idx" ON "background_tasks"("parent_session_id", "created_at");
CREATE INDEX "background_tasks_spawn_item_id_idx" ON "background_tasks"("spawn_item_id");
-- Open tasks, for the slots, the sweep and the gauges: the table keeps every finished task.
CREATE INDEX "background_tasks_open_idx" ON "background_tasks"("status", "created_at") WHERE "status" IN ('queued', 'running');
-- A lane's tasks whose results nobody took (`/stop`).
CREATE INDEX "background_tasks_untaken_idx" ON "background_tasks"("parent_lane_key") WHERE "consumed_by" IS NULL;
-- A yield's tasks.
CREATE INDEX "background_tasks_yield_id_idx" ON "background_tasks"("yield_id") WHERE "yield_id" IS NOT NULL;
ALTER TABLE "background_tasks" ADD CONSTRAINT "background_tasks_parent_session_id_fkey" FOREIGN KEY ("parent_session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "background_tasks" ADD CONSTRAINT "background_tasks_child_session_id_fkey" FOREIGN KEY ("child_session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
