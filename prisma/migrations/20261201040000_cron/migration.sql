-- CreateTable: cron jobs, the scheduler's source of truth (docs/scheduler.md).
CREATE TABLE "cron_jobs" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "schedule" JSONB NOT NULL,
    "tz" TEXT NOT NULL,
    "anchor_at" TIMESTAMPTZ(3) NOT NULL,
    "target" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "missed" TEXT NOT NULL DEFAULT 'run_once',
    "catchup_window_ms" INTEGER NOT NULL DEFAULT 600000,
    "max_runs" INTEGER,
    "end_at" TIMESTAMPTZ(3),
    "delete_after_run" BOOLEAN NOT NULL DEFAULT false,
    "jitter_ms" INTEGER NOT NULL DEFAULT 0,
    "owner" TEXT NOT NULL,
    "run_count" INTEGER NOT NULL DEFAULT 0,
    "consecutive_failures" INTEGER NOT NULL DEFAULT 0,
    "disabled_reason" TEXT,
    "next_slot" TIMESTAMPTZ(3),
    "next_run_at" TIMESTAMPTZ(3),
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "cron_jobs_pkey" PRIMARY KEY ("id")
);

-- CreateTable: one row per (job, slot); the unique key is what makes a slot fire once.
CREATE TABLE "cron_runs" (
    "id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "slot" TIMESTAMPTZ(3) NOT NULL,
    "kind" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "outcome" TEXT,
    "manual" BOOLEAN NOT NULL DEFAULT false,
    "job_version" INTEGER NOT NULL DEFAULT 1,
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "retry_at" TIMESTAMPTZ(3),
    "error" TEXT,
    "delivery_ids" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "session_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "cron_runs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "cron_jobs_enabled_next_run_at_idx" ON "cron_jobs"("enabled", "next_run_at");
CREATE INDEX "cron_jobs_target_idx" ON "cron_jobs"("target");
-- Unique per scheduled slot; manual runs stand beside the schedule and never take a slot.
CREATE UNIQUE INDEX "cron_runs_job_id_slot_key" ON "cron_runs"("job_id", "slot") WHERE NOT "manual";
CREATE INDEX "cron_runs_job_id_slot_idx" ON "cron_runs"("job_id", "slot");
CREATE INDEX "cron_runs_status_retry_at_idx" ON "cron_runs"("status", "retry_at");

-- AddForeignKey
ALTER TABLE "cron_runs" ADD CONSTRAINT "cron_runs_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "cron_jobs"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- CreateTable: the schedulers' heartbeat (one row), and the spans in which none ran. A slot
-- due in such a span was missed and follows its job's policy; a slot that is merely late
-- (the schedulers were busy) still fires.
CREATE TABLE "cron_scheduler_beats" (
    "id" INTEGER NOT NULL,
    "beat_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "cron_scheduler_beats_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "cron_outages" (
    "id" BIGSERIAL NOT NULL,
    "from_at" TIMESTAMPTZ(3) NOT NULL,
    "to_at" TIMESTAMPTZ(3) NOT NULL,
    "recorded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "cron_outages_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "cron_outages_from_at_key" ON "cron_outages"("from_at");
CREATE INDEX "cron_outages_to_at_idx" ON "cron_outages"("to_at");
