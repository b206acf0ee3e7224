import { randomUUID } from "node:crypto";
import {
  CronSchedule,
  err,
  ok,
  parseChatAddress,
  type Clock,
  type CronCreateRequest,
  type CronPayload,
  type CronUpdateRequest,
  type ErrorCode,
  type Result,
} from "@nahida/contracts";
import { newRowId, type CronJob, type CronJobPatch, type CronRepository, type NewCronJob, type Tx } from "@nahida/db";
import { jitterFor } from "./plan-fire";
import { checkSchedule, nextSlot, type CheckedSchedule, type ResolvedSchedule } from "./schedule";

export interface CronJobError {
  code: Extract<ErrorCode, "bad_request" | "invalid_address" | "not_found" | "conflict">;
  message: string;
}

export interface CronJobsOptions {
  cron: CronRepository;
  transaction: <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>;
  clock: Clock;
  /** Time zone of schedules that name none (NAHIDA_TIMEZONE). */
  defaultTz: string;
  /** Slots closer together than this are refused (SCHEDULER_MIN_INTERVAL_MS). */
  minIntervalMs: number;
  /** Enabled jobs one target may have (SCHEDULER_MAX_JOBS_PER_TARGET). */
  maxJobsPerTarget: number;
  /** Channel instances that can be sent to; a target on another channel is refused. */
  channels: readonly string[];
}

/**
 * Limits a schedule puts on the rest of the job: jitter under half the shortest interval
 * (more would reorder slots and fire them in pairs), and an end after the first slot.
 */
function checkBounds(checked: CheckedSchedule, jitterMs: number, endAt: Date | null): Result<void, CronJobError> {
  if (checked.shortestIntervalMs !== null && jitterMs > 0 && jitterMs >= checked.shortestIntervalMs / 2) {
    return err({ code: "bad_request", message: `jitter_ms: must be less than half the schedule's interval (${Math.floor(checked.shortestIntervalMs / 2)} ms)` });
  }
  if (endAt && endAt.getTime() < checked.firstSlot.getTime()) {
    return err({ code: "bad_request", message: `end_at: ${endAt.toISOString()} is before the first slot (${checked.firstSlot.toISOString()})` });
  }
  return ok(undefined);
}

/** The first slot of a (new or edited) schedule and when it is claimed, jitter included. */
function firstRun(jobId: string, resolved: ResolvedSchedule, jitterMs: number, now: Date): { nextSlot: Date | null; nextRunAt: Date | null } {
  const slot = nextSlot(resolved, now);
  return { nextSlot: slot, nextRunAt: slot ? new Date(slot.getTime() + jitterFor(jobId, jitterMs)(slot)) : null };
}

/**
 * Creating, editing and deleting cron jobs, with every check a request can fail: the
 * schedule (expression, zone, `at` in the past, minimum interval), the target (a typed
 * address of a registered channel) and the per-target quota. The REST API, the agent's
 * cron tools and the chat commands all go through it. An edit takes the job's row lock, so
 * it waits for a fire in progress; the next slot is recomputed from the new schedule, and
 * the old timing never fires again.
 */
export class CronJobs {
  constructor(private readonly o: CronJobsOptions) {}

  /**
   * Checks a new job and computes what is stored (time zone, first slot); writes nothing.
   * The agent's `cron_create` checks with it when the tool calls and writes the job in the
   * run's commit.
   */
  prepare(request: CronCreateRequest, owner: string, id: string = randomUUID()): Result<NewCronJob, CronJobError> {
    const now = this.o.clock.now();
    const target = this.checkTarget(request.target);
    if (!target.ok) return target;
    const checked = checkSchedule(request.schedule, { defaultTz: this.o.defaultTz, now, minIntervalMs: this.o.minIntervalMs });
    if (!checked.ok) return err({ code: "bad_request", message: `${checked.error.field}: ${checked.error.message}` });
    const jitterMs = request.jitter_ms;
    const bounds = checkBounds(checked.value, jitterMs, request.end_at ? new Date(request.end_at) : null);
    if (!bounds.ok) return bounds;
    return ok({
      id,
      name: request.name,
      schedule: request.schedule,
      tz: checked.value.tz,
      anchorAt: now,
      target: request.target,
      payload: request.payload,
      enabled: request.enabled,
      missed: request.missed,
      catchupWindowMs: request.catchup_window_ms,
      maxRuns: request.max_runs ?? null,
      endAt: request.end_at ? new Date(request.end_at) : null,
      deleteAfterRun: request.delete_after_run ?? request.schedule.kind === "at",
      jitterMs,
      owner,
      ...firstRun(id, { schedule: request.schedule, tz: checked.value.tz, anchorAt: now }, jitterMs, now),
    });
  }

  async create(request: CronCreateRequest, owner: string): Promise<Result<CronJob, CronJobError>> {
    const prepared = this.prepare(request, owner);
    if (!prepared.ok) return prepared;
    const input = prepared.value;
    return this.o.transaction(async (tx) => {
      if (input.enabled) {
        const quota = await this.checkQuota(input.target, tx);
        if (!quota.ok) return quota;
      }
      return ok(await this.o.cron.create(input, tx));
    });
  }

  /** Whether `target` may have one more enabled job: the check a tool makes when it calls (its write in the run's commit does not check again). */
  async checkRoom(target: string): Promise<Result<void, CronJobError>> {
    return this.o.transaction((tx) => this.checkQuota(target, tx));
  }

  /**
   * Every check of an edit (the job exists, target, schedule, quota when it is switched on,
   * an `at` that passed), made by carrying the edit out in a transaction that is rolled
   * back. A tool or `/cron` checks with it when called and edits in the run's commit.
   */
  async checkUpdate(id: string, request: CronUpdateRequest): Promise<Result<void, CronJobError>> {
    return this.dryRun((tx) => this.update(id, request, tx));
  }

  /** The check of a delete: the job exists (a dry run would cascade through its whole history). */
  async checkDelete(id: string): Promise<Result<void, CronJobError>> {
    return (await this.o.cron.get(id)) ? ok(undefined) : err({ code: "not_found", message: `cron job ${id} does not exist` });
  }

  private async dryRun(edit: (tx: Tx) => Promise<Result<unknown, CronJobError>>): Promise<Result<void, CronJobError>> {
    const rolledBack = new Error("dry run");
    let result: Result<unknown, CronJobError> = ok(undefined);
    try {
      await this.o.transaction(async (tx) => {
        result = await edit(tx);
        throw rolledBack;
      });
    } catch (error) {
      if (error !== rolledBack) throw error;
    }
    return result.ok ? ok(undefined) : result;
  }

  /** Edits a job; with `tx`, inside the caller's transaction (a run's commit). */
  async update(id: string, request: CronUpdateRequest, tx?: Tx): Promise<Result<CronJob, CronJobError>> {
    if (request.target !== undefined) {
      const target = this.checkTarget(request.target);
      if (!target.ok) return target;
    }
    return this.within(tx, async (tx) => {
      const job = await this.o.cron.lock(id, tx);
      if (!job) return err({ code: "not_found", message: `cron job ${id} does not exist` });
      const now = this.o.clock.now();
      const patch: CronJobPatch = {
        ...(request.name !== undefined ? { name: request.name } : {}),
        ...(request.target !== undefined ? { target: request.target } : {}),
        ...(request.payload !== undefined ? { payload: request.payload } : {}),
        ...(request.missed !== undefined ? { missed: request.missed } : {}),
        ...(request.catchup_window_ms !== undefined ? { catchupWindowMs: request.catchup_window_ms } : {}),
        ...(request.max_runs !== undefined ? { maxRuns: request.max_runs } : {}),
        ...(request.end_at !== undefined ? { endAt: request.end_at ? new Date(request.end_at) : null } : {}),
        ...(request.delete_after_run !== undefined ? { deleteAfterRun: request.delete_after_run } : {}),
        ...(request.jitter_ms !== undefined ? { jitterMs: request.jitter_ms } : {}),
      };
      const jitterMs = request.jitter_ms ?? job.jitterMs;
      const enabling = request.enabled === true && !job.enabled;
      if (request.schedule !== undefined || request.jitter_ms !== undefined || enabling) {
        // A new schedule (or jitter) counts from now; so does a job that is switched back on:
        // the slots it slept through are not owed.
        const stored = CronSchedule.safeParse(job.schedule);
        const schedule = request.schedule ?? (stored.success ? stored.data : null);
        if (!schedule) return err({ code: "bad_request", message: "the job's stored schedule is unreadable; give a new schedule" });
        const checked = checkSchedule(schedule, { defaultTz: this.o.defaultTz, now, minIntervalMs: this.o.minIntervalMs });
        if (!checked.ok) return err({ code: "bad_request", message: `${checked.error.field}: ${checked.error.message}` });
        const endAt = request.end_at !== undefined ? (request.end_at ? new Date(request.end_at) : null) : job.endAt;
        const bounds = checkBounds(checked.value, jitterMs, endAt);
        if (!bounds.ok) return bounds;
        const anchorAt = request.schedule !== undefined ? now : job.anchorAt;
        Object.assign(patch, { schedule, tz: checked.value.tz, anchorAt }, firstRun(job.id, { schedule, tz: checked.value.tz, anchorAt }, jitterMs, now));
      }
      if (request.enabled !== undefined) {
        patch.enabled = request.enabled;
        if (request.enabled) Object.assign(patch, { consecutiveFailures: 0, disabledReason: null });
      }
      const enabledAfter = patch.enabled ?? job.enabled;
      const targetAfter = patch.target ?? job.target;
      if (enabledAfter && (enabling || targetAfter !== job.target)) {
        const quota = await this.checkQuota(targetAfter, tx, job.id);
        if (!quota.ok) return quota;
      }
      return ok(await this.o.cron.update(job.id, patch, tx));
    });
  }

  /** Deletes a job and its runs; with `tx`, inside the caller's transaction. */
  async delete(id: string, tx?: Tx): Promise<Result<void, CronJobError>> {
    // Taking the row lock first makes the delete wait for a fire in progress, which then
    // commits its run; the delete removes the job and its runs together.
    return this.within(tx, async (tx) => {
      if (!(await this.o.cron.lock(id, tx))) return err({ code: "not_found", message: `cron job ${id} does not exist` });
      await this.o.cron.delete(id, tx);
      return ok(undefined);
    });
  }

  /**
   * A manual fire: a `claimed` run that a scheduler carries out within a tick. It does not
   * move the schedule.
   */
  async runNow(id: string): Promise<Result<{ runId: string }, CronJobError>> {
    return this.o.transaction(async (tx) => {
      const job = await this.o.cron.lock(id, tx);
      if (!job) return err({ code: "not_found", message: `cron job ${id} does not exist` });
      // A manual run stands beside the schedule (the unique slot key leaves manual runs out):
      // its slot is when it was asked for.
      const runId = newRowId();
      const kind = (job.payload as { kind: CronPayload["kind"] }).kind;
      await this.o.cron.insertRuns([{ id: runId, jobId: job.id, slot: this.o.clock.now(), kind, status: "claimed", manual: true, jobVersion: job.version }], tx);
      return ok({ runId });
    });
  }

  private within<T>(tx: Tx | undefined, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return tx ? fn(tx) : this.o.transaction(fn);
  }

  private checkTarget(target: string): Result<void, CronJobError> {
    const address = parseChatAddress(target);
    if (!address.ok) return err({ code: "invalid_address", message: address.error.message });
    if (!this.o.channels.includes(address.value.channel)) {
      return err({ code: "bad_request", message: `channel ${JSON.stringify(address.value.channel)} is not registered; registered: ${this.o.channels.join(", ") || "none"}` });
    }
    return ok(undefined);
  }

  private async checkQuota(target: string, tx: Tx, exceptId?: string): Promise<Result<void, CronJobError>> {
    const count = await this.o.cron.countEnabledForTarget(target, tx, exceptId);
    if (count >= this.o.maxJobsPerTarget) {
      return err({ code: "conflict", message: `${target} already has ${count} enabled cron jobs (the limit is ${this.o.maxJobsPerTarget}); disable or delete one first` });
    }
    return ok(undefined);
  }
}
