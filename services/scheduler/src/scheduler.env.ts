import { z } from "zod";
import { positiveMs } from "@nahida/config";

export const schedulerEnvSchema = z.object({
  /** Schedules whose slots are closer than this are refused. Tests may lower it to 1000. */
  SCHEDULER_MIN_INTERVAL_MS: z.coerce.number().int().min(1_000, "must be at least 1000").max(86_400_000).default(60_000),
  /** Enabled cron jobs one target chat may have. */
  SCHEDULER_MAX_JOBS_PER_TARGET: z.coerce.number().int().min(1).max(100_000).default(50),
  /** Consecutive failed fires after which a job is disabled and its chat told once. */
  SCHEDULER_MAX_FAILURES: z.coerce.number().int().min(1).max(1_000).default(5),
  /** Longest a scheduler sleeps between looks at the table (it wakes earlier for a due job). */
  SCHEDULER_POLL_MS: positiveMs.default(250),
});
export type SchedulerEnv = z.infer<typeof schedulerEnvSchema>;
