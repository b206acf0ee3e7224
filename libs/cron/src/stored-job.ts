import { CronMissedPolicy, CronPayload, CronSchedule, err, ok, type Result } from "@nahida/contracts";
import type { CronJob } from "@nahida/db";
import type { ResolvedSchedule } from "./schedule";

/** A cron job row with its stored JSON parsed by the contracts. */
export interface StoredCronJob {
  row: CronJob;
  schedule: CronSchedule;
  payload: CronPayload;
  missed: CronMissedPolicy;
  resolved: ResolvedSchedule;
}

/**
 * Reads a job row's schedule, payload and policy through the contract schemas, once, where
 * it is read: a row no schema accepts (written by hand, or by a newer version) is an error
 * with the reason, never guessed at.
 */
export function readCronJob(row: CronJob): Result<StoredCronJob, string> {
  const schedule = CronSchedule.safeParse(row.schedule);
  if (!schedule.success) return err(`cron job ${row.id} has an unreadable schedule: ${schedule.error.issues[0]?.message ?? "invalid"}`);
  const payload = CronPayload.safeParse(row.payload);
  if (!payload.success) return err(`cron job ${row.id} has an unreadable payload: ${payload.error.issues[0]?.message ?? "invalid"}`);
  const missed = CronMissedPolicy.safeParse(row.missed);
  if (!missed.success) return err(`cron job ${row.id} has an unknown missed policy ${JSON.stringify(row.missed)}`);
  return ok({ row, schedule: schedule.data, payload: payload.data, missed: missed.data, resolved: { schedule: schedule.data, tz: row.tz, anchorAt: row.anchorAt } });
}
