import { z } from "zod";
import { positiveMs } from "@nahida/config";

const retentionDays = (days: number) => z.coerce.number({ message: "must be a number of days" }).int().min(0).max(36_500).default(days);

export const schedulerEnvSchema = z.object({
  /** Schedules whose slots are closer than this are refused. Tests may lower it to 1000. */
  SCHEDULER_MIN_INTERVAL_MS: z.coerce.number().int().min(1_000, "must be at least 1000").max(86_400_000).default(60_000),
  /** Enabled cron jobs one target chat may have. */
  SCHEDULER_MAX_JOBS_PER_TARGET: z.coerce.number().int().min(1).max(100_000).default(50),
  /** Consecutive failed fires after which a job is disabled and its chat told once. */
  SCHEDULER_MAX_FAILURES: z.coerce.number().int().min(1).max(1_000).default(5),
  /** Longest a scheduler sleeps between looks at the table (it wakes earlier for a due job). */
  SCHEDULER_POLL_MS: positiveMs.default(250),
  // Retention (the janitor, docs/scaling.md): days each kind of row is kept; 0 keeps it for good.
  /** Raw platform events (inbound_messages.raw); the normalized message stays. */
  NAHIDA_RETENTION_RAW_EVENTS_DAYS: retentionDays(7),
  /** Inbound messages and quarantined events; at least the dedupe window (checked by the launcher). */
  NAHIDA_RETENTION_INBOUND_DAYS: retentionDays(30),
  /** Finished lane items and runs. */
  NAHIDA_RETENTION_LANES_DAYS: retentionDays(7),
  /** Sent, failed and expired deliveries (and with them their idempotency keys). */
  NAHIDA_RETENTION_DELIVERIES_DAYS: retentionDays(30),
  /** Answered or recorded session events. */
  NAHIDA_RETENTION_SESSION_EVENTS_DAYS: retentionDays(30),
  /** Finished cron runs; each job's latest stays. */
  NAHIDA_RETENTION_CRON_RUNS_DAYS: retentionDays(30),
  /** Rows one janitor statement prunes at most. */
  NAHIDA_JANITOR_BATCH: z.coerce.number().int().min(10).max(100_000).default(500),
  /** Time between two janitor passes. */
  NAHIDA_JANITOR_INTERVAL_MS: positiveMs.min(1_000, "must be at least 1000").default(600_000),
});
export type SchedulerEnv = z.infer<typeof schedulerEnvSchema>;
