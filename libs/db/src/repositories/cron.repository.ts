import { randomUUID } from "node:crypto";
import type { CronPayload, CronRunStatus, CronSchedule } from "@nahida/contracts";
import type { PrismaClient, Tx } from "../database";
import { Prisma, type CronJob, type CronRun } from "../generated/prisma/client";
import { pgJson } from "../statements";
import { newRowId } from "../ids";

export interface NewCronJob {
  id?: string;
  name: string;
  schedule: CronSchedule;
  tz: string;
  anchorAt: Date;
  target: string;
  payload: CronPayload;
  enabled: boolean;
  missed: "skip" | "run_once";
  catchupWindowMs: number;
  maxRuns: number | null;
  endAt: Date | null;
  deleteAfterRun: boolean;
  jitterMs: number;
  owner: string;
  nextSlot: Date | null;
  nextRunAt: Date | null;
}

/** Fields an edit may set; the schedule fields come together (a new schedule re-anchors). */
export type CronJobPatch = Partial<Omit<NewCronJob, "id" | "owner">> & { disabledReason?: string | null; consecutiveFailures?: number };

export interface NewCronRun {
  id?: string;
  jobId: string;
  slot: Date;
  kind: CronPayload["kind"];
  status: CronRunStatus;
  manual?: boolean;
  /** The job's version at fire time. */
  jobVersion?: number;
  attempt?: number;
  /** An insert takes at most one (the fire's delivery, named before it is written). */
  deliveryIds?: string[];
  sessionId?: string | null;
  error?: string | null;
  retryAt?: Date | null;
  finishedAt?: Date | null;
}

/** Where a job's next slot moves after a fire. */
export interface CronAdvance {
  jobId: string;
  nextSlot: Date | null;
  nextRunAt: Date | null;
  /** Fires this claim made (0 or 1). */
  fired: number;
  /** False once the job has no more slots. */
  enabled: boolean;
}

export interface CronJobFilter {
  target?: string;
  enabled?: boolean;
  owner?: string;
  limit: number;
  offset: number;
}

/** A run waiting for the scheduler: a manual run or a retry (`claimed` / `retrying` and due). */
export interface PendingCronRun {
  run: CronRun;
  job: CronJob;
}

/** How a fire's effect ended. */
export type CronEffectOutcome = { kind: "sent" } | { kind: "failed"; error: string; retryable: boolean };

const json = (value: unknown) => pgJson(value) as Prisma.InputJsonValue;

/** The select list both looks at the table share: when the next job is due, whether manual runs or retries wait. */
const waitingState = (now: Date) => Prisma.sql`
  (SELECT next_run_at FROM cron_jobs WHERE enabled AND next_run_at IS NOT NULL ORDER BY next_run_at LIMIT 1) AS next_due,
  EXISTS (SELECT 1 FROM cron_runs WHERE status = 'claimed' OR (status = 'retrying' AND retry_at <= ${now})) AS pending`;

/** Cron jobs and their runs. The scheduler claims due jobs with `FOR UPDATE SKIP LOCKED`. */
export class CronRepository {
  constructor(private readonly prisma: PrismaClient) {}

  async create(input: NewCronJob, tx?: Tx): Promise<CronJob> {
    return (tx ?? this.prisma).cronJob.create({
      data: { ...input, id: input.id ?? randomUUID(), schedule: json(input.schedule), payload: json(input.payload) },
    });
  }

  async get(id: string, tx?: Tx): Promise<CronJob | null> {
    return (tx ?? this.prisma).cronJob.findUnique({ where: { id } });
  }

  /** Locks the job's row until `tx` ends (an edit waits for a fire in progress, and the other way round). */
  async lock(id: string, tx: Tx): Promise<CronJob | null> {
    const rows = await tx.$queryRaw<{ id: string }[]>`SELECT id::text AS id FROM cron_jobs WHERE id = ${id}::uuid FOR UPDATE`;
    return rows.length ? tx.cronJob.findUnique({ where: { id } }) : null;
  }

  async list(filter: CronJobFilter): Promise<{ jobs: CronJob[]; total: number }> {
    const where = {
      ...(filter.target ? { target: filter.target } : {}),
      ...(filter.enabled !== undefined ? { enabled: filter.enabled } : {}),
      ...(filter.owner ? { owner: filter.owner } : {}),
    };
    const [jobs, total] = await Promise.all([
      this.prisma.cronJob.findMany({ where, orderBy: [{ createdAt: "asc" }, { id: "asc" }], take: filter.limit, skip: filter.offset }),
      this.prisma.cronJob.count({ where }),
    ]);
    return { jobs, total };
  }

  /**
   * The target's jobs whose id starts with `idPrefix` (lower-case hex), at most `limit`: a
   * caller asking for one sees whether the prefix is ambiguous without listing the rest.
   */
  async findByIdPrefix(target: string, idPrefix: string, limit: number): Promise<CronJob[]> {
    const prefix = idPrefix.toLowerCase();
    if (!/^[0-9a-f-]*$/.test(prefix)) return [];
    const pattern = `${prefix}%`;
    const rows = await this.prisma.$queryRaw<{ id: string }[]>`
      SELECT id::text AS id FROM cron_jobs WHERE target = ${target} AND id::text LIKE ${pattern} ORDER BY id LIMIT ${limit}`;
    if (rows.length === 0) return [];
    return this.prisma.cronJob.findMany({ where: { id: { in: rows.map((r) => r.id) } }, orderBy: { id: "asc" } });
  }

  async update(id: string, patch: CronJobPatch, tx: Tx): Promise<CronJob> {
    const { schedule, payload, ...rest } = patch;
    return tx.cronJob.update({
      where: { id },
      data: {
        ...rest,
        ...(schedule ? { schedule: json(schedule) } : {}),
        ...(payload ? { payload: json(payload) } : {}),
        version: { increment: 1 },
      },
    });
  }

  /** True when it existed. Its runs go with it. */
  async delete(id: string, tx?: Tx): Promise<boolean> {
    const { count } = await (tx ?? this.prisma).cronJob.deleteMany({ where: { id } });
    return count === 1;
  }

  /**
   * Serialises quota checks of one target across replicas until `tx` ends, then counts its
   * enabled jobs (other than `exceptId`).
   */
  async countEnabledForTarget(target: string, tx: Tx, exceptId?: string): Promise<number> {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`cron-target:${target}`}))`;
    return tx.cronJob.count({ where: { target, enabled: true, ...(exceptId ? { id: { not: exceptId } } : {}) } });
  }

  /**
   * Due jobs (`next_run_at <= now`), oldest first, locked for `tx`; jobs another scheduler
   * holds are skipped, so replicas share the due set without waiting for each other.
   */
  async claimDue(now: Date, limit: number, tx: Tx): Promise<CronJob[]> {
    // One statement; the columns are aliased to the model's field names.
    return tx.$queryRaw<CronJob[]>`
      SELECT id::text AS id, name, schedule, tz, anchor_at AS "anchorAt", target, payload, enabled, missed,
             catchup_window_ms AS "catchupWindowMs", max_runs AS "maxRuns", end_at AS "endAt", delete_after_run AS "deleteAfterRun",
             jitter_ms AS "jitterMs", owner, run_count AS "runCount", consecutive_failures AS "consecutiveFailures",
             disabled_reason AS "disabledReason", next_slot AS "nextSlot", next_run_at AS "nextRunAt", version,
             created_at AS "createdAt", updated_at AS "updatedAt"
        FROM cron_jobs
       WHERE enabled AND next_run_at <= ${now}
       ORDER BY next_run_at
       LIMIT ${limit}
         FOR UPDATE SKIP LOCKED`;
  }

  /**
   * Inserts runs, skipping (job, slot) pairs that exist; returns the ids it inserted. A slot
   * that already has a row was fired or recorded by someone else, and its effect must not
   * be written again.
   */
  async insertRuns(runs: readonly NewCronRun[], tx: Tx): Promise<Set<string>> {
    if (runs.length === 0) return new Set();
    const rows = runs.map((r) => ({ ...r, id: r.id ?? newRowId() }));
    const inserted = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO cron_runs (id, job_id, slot, kind, status, manual, job_version, attempt, delivery_ids, session_id, error, retry_at, finished_at)
      SELECT id, job_id, slot, kind, status, manual, job_version, attempt, CASE WHEN delivery_id IS NULL THEN '{}'::text[] ELSE ARRAY[delivery_id::text] END,
             session_id, error, retry_at, finished_at
        FROM unnest(
          ${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.jobId)}::uuid[], ${rows.map((r) => r.slot)}::timestamptz[],
          ${rows.map((r) => r.kind)}::text[], ${rows.map((r) => r.status)}::text[], ${rows.map((r) => r.manual ?? false)}::boolean[],
          ${rows.map((r) => r.jobVersion ?? 1)}::int[], ${rows.map((r) => r.attempt ?? 0)}::int[], ${rows.map((r) => r.deliveryIds?.[0] ?? null)}::uuid[],
          ${rows.map((r) => r.sessionId ?? null)}::uuid[], ${rows.map((r) => r.error ?? null)}::text[],
          ${rows.map((r) => r.retryAt ?? null)}::timestamptz[], ${rows.map((r) => r.finishedAt ?? null)}::timestamptz[])
          AS u(id, job_id, slot, kind, status, manual, job_version, attempt, delivery_id, session_id, error, retry_at, finished_at)
      ON CONFLICT (job_id, slot) WHERE NOT manual DO NOTHING
      RETURNING id::text AS id`;
    return new Set(inserted.map((r) => r.id));
  }

  /** Moves the claimed jobs to their next slots, in one statement. */
  async advance(updates: readonly CronAdvance[], tx: Tx): Promise<void> {
    if (updates.length === 0) return;
    await tx.$executeRaw`
      UPDATE cron_jobs j
         SET next_slot = u.next_slot, next_run_at = u.next_run_at, run_count = j.run_count + u.fired,
             enabled = j.enabled AND u.enabled, updated_at = now()
        FROM unnest(${updates.map((u) => u.jobId)}::uuid[], ${updates.map((u) => u.nextSlot)}::timestamptz[],
                    ${updates.map((u) => u.nextRunAt)}::timestamptz[], ${updates.map((u) => u.fired)}::int[],
                    ${updates.map((u) => u.enabled)}::boolean[]) AS u(id, next_slot, next_run_at, fired, enabled)
       WHERE j.id = u.id`;
  }

  /**
   * Manual runs and due retries, locked for `tx` (others skip them), with their jobs locked
   * first in id order (see {@link lockRunning}).
   */
  async claimPendingRuns(now: Date, limit: number, tx: Tx): Promise<PendingCronRun[]> {
    const due = await tx.$queryRaw<{ id: string }[]>`
      SELECT id::text AS id FROM cron_runs
       WHERE status = 'claimed' OR (status = 'retrying' AND retry_at <= ${now})
       ORDER BY created_at
       LIMIT ${limit}`;
    if (due.length === 0) return [];
    await tx.$queryRaw`
      SELECT j.id FROM cron_jobs j
       WHERE j.id IN (SELECT job_id FROM cron_runs WHERE id = ANY(${due.map((r) => r.id)}::uuid[]))
       ORDER BY j.id
         FOR UPDATE OF j`;
    const ids = await tx.$queryRaw<{ id: string }[]>`
      SELECT id::text AS id FROM cron_runs
       WHERE id = ANY(${due.map((r) => r.id)}::uuid[]) AND (status = 'claimed' OR (status = 'retrying' AND retry_at <= ${now}))
       FOR UPDATE SKIP LOCKED`;
    if (ids.length === 0) return [];
    const runs = await tx.cronRun.findMany({ where: { id: { in: ids.map((r) => r.id) } }, include: { job: true }, orderBy: { createdAt: "asc" } });
    return runs.map(({ job, ...run }) => ({ run, job }));
  }

  /**
   * Running runs whose effect has an outcome: a notify whose latest delivery is sent, failed
   * or expired; an agent turn whose answering run recorded its outcome, or whose lane item
   * failed for good. A plain read: lock them with {@link lockRunning}. A failed notify is
   * `retryable` only when nothing of it reached the platform and no part's outcome is unknown:
   * sending it again cannot duplicate anything.
   */
  async finishedEffects(limit: number): Promise<{ runId: string; outcome: CronEffectOutcome }[]> {
    const rows = await this.prisma.$queryRaw<{ id: string; outcome: string; error: string | null; retryable: boolean }[]>`
      (SELECT r.id::text AS id, d.status AS outcome, d.error, (d.status = 'failed' AND d.sent_parts = 0 AND cardinality(d.uncertain_parts) = 0) AS retryable
         FROM cron_runs r
         JOIN deliveries d ON d.id = (r.delivery_ids[array_length(r.delivery_ids, 1)])::uuid
        WHERE r.status = 'running' AND r.kind = 'notify' AND d.status IN ('sent', 'failed', 'expired')
        LIMIT ${limit})
      UNION ALL
      (SELECT r.id::text, CASE WHEN r.outcome = 'succeeded' THEN 'sent' ELSE 'failed' END, r.error, false
         FROM cron_runs r
        WHERE r.status = 'running' AND r.kind IN ('agent_turn', 'command') AND r.outcome IS NOT NULL
        LIMIT ${limit})
      UNION ALL
      (SELECT r.id::text, 'failed', li.error, false
         FROM cron_runs r
         JOIN lane_items li ON li.kind = 'scheduled_turn' AND li.ref_id = r.id::text
        WHERE r.status = 'running' AND r.kind IN ('agent_turn', 'command') AND r.outcome IS NULL AND li.status = 'failed'
        LIMIT ${limit})`;
    return rows.map((row) => ({
      runId: row.id,
      outcome:
        row.outcome === "sent"
          ? { kind: "sent" }
          : {
              kind: "failed",
              retryable: row.retryable,
              error: row.error ?? (row.outcome === "expired" ? "the delivery expired before it could be sent" : "failed"),
            },
    }));
  }

  /**
   * Records a scheduled turn's result on its run, in the answering run's commit; the
   * scheduler then counts it. No-op when the run is gone (its job was deleted) or finished.
   */
  async recordTurnOutcome(id: string, outcome: { outcome: "succeeded" | "failed"; sessionId: string; deliveryIds: string[]; error: string | null }, tx: Tx): Promise<void> {
    await tx.cronRun.updateMany({
      where: { id, status: "running" },
      data: { outcome: outcome.outcome, sessionId: outcome.sessionId, deliveryIds: outcome.deliveryIds, error: outcome.error },
    });
  }

  /**
   * Locks the jobs of `runIds` (in id order), then the runs that are still `running` (others
   * skip those another scheduler holds), and returns the runs with their jobs. Jobs before
   * runs, as a job's delete takes them (its runs go with it), so the two cannot deadlock.
   */
  async lockRunning(runIds: readonly string[], tx: Tx): Promise<(CronRun & { job: CronJob })[]> {
    if (runIds.length === 0) return [];
    await tx.$queryRaw`
      SELECT j.id FROM cron_jobs j
       WHERE j.id IN (SELECT job_id FROM cron_runs WHERE id = ANY(${[...runIds]}::uuid[]))
       ORDER BY j.id
         FOR UPDATE OF j`;
    const locked = await tx.$queryRaw<{ id: string }[]>`
      SELECT id::text AS id FROM cron_runs WHERE id = ANY(${[...runIds]}::uuid[]) AND status = 'running' FOR UPDATE SKIP LOCKED`;
    if (locked.length === 0) return [];
    return tx.cronRun.findMany({ where: { id: { in: locked.map((r) => r.id) } }, include: { job: true }, orderBy: { jobId: "asc" } });
  }

  /**
   * Counts a fire's outcome on its job: a failure adds one to `consecutive_failures`, a
   * success resets it. Returns the new count, or null when the job is gone.
   */
  async recordOutcome(jobId: string, failed: boolean, tx: Tx): Promise<number | null> {
    const rows = await tx.$queryRaw<{ consecutive_failures: number }[]>`
      UPDATE cron_jobs SET consecutive_failures = CASE WHEN ${failed} THEN consecutive_failures + 1 ELSE 0 END, updated_at = now()
       WHERE id = ${jobId}::uuid
       RETURNING consecutive_failures`;
    return rows[0]?.consecutive_failures ?? null;
  }

  /** Switches a job off with the reason shown to operators; false when it was already off. */
  async disable(jobId: string, reason: string, tx: Tx): Promise<boolean> {
    const { count } = await tx.cronJob.updateMany({ where: { id: jobId, enabled: true }, data: { enabled: false, disabledReason: reason, nextRunAt: null } });
    return count === 1;
  }

  /**
   * A scheduler's look at the table, one statement: when the next job is due, whether manual
   * runs or retries wait, and the outage this look ends, if the heartbeat stood still longer
   * than `outageAfterMs` (since always when no scheduler ever beat). The outage is recorded
   * in the same statement, so a crash cannot lose it; it is named by the beat it starts from,
   * so later looks (other replicas, or this one while its claims keep failing) extend it.
   */
  async look(now: Date, outageAfterMs: number): Promise<{ outage: { from: Date; to: Date } | null; nextDueAt: Date | null; pendingRuns: boolean }> {
    const [row] = await this.prisma.$queryRaw<{ from_at: Date | null; to_at: Date | null; next_due: Date | null; pending: boolean }[]>`
      WITH prev AS (SELECT max(beat_at) AS beat_at FROM cron_scheduler_beats),
           outage AS (
             INSERT INTO cron_outages (from_at, to_at)
             SELECT COALESCE(prev.beat_at, 'epoch'::timestamptz), ${now}::timestamptz FROM prev
              WHERE prev.beat_at IS NULL OR prev.beat_at < ${now}::timestamptz - ${outageAfterMs} * interval '1 millisecond'
             ON CONFLICT (from_at) DO UPDATE SET to_at = GREATEST(cron_outages.to_at, EXCLUDED.to_at)
             RETURNING from_at, to_at)
      SELECT (SELECT from_at FROM outage) AS from_at, (SELECT to_at FROM outage) AS to_at,
             ${waitingState(now)}`;
    const outage = row?.from_at && row.to_at ? { from: row.from_at, to: row.to_at } : null;
    return { outage, nextDueAt: row?.next_due ?? null, pendingRuns: row?.pending ?? false };
  }

  /**
   * The schedulers' heartbeat, written after work that committed (a scheduler whose claims
   * keep failing does not beat, so its span counts as an outage): at most one write a
   * second across replicas. Also drops outages older than eight days.
   */
  async beat(now: Date): Promise<void> {
    await this.prisma.$executeRaw`
      WITH up AS (
        INSERT INTO cron_scheduler_beats (id, beat_at) VALUES (1, ${now})
        ON CONFLICT (id) DO UPDATE SET beat_at = EXCLUDED.beat_at
         WHERE cron_scheduler_beats.beat_at < EXCLUDED.beat_at - interval '1 second'
        RETURNING 1)
      DELETE FROM cron_outages WHERE to_at < ${now}::timestamptz - interval '8 days' AND EXISTS (SELECT 1 FROM up)`;
  }

  /** Outages that ended at or after `since`. */
  async outagesSince(since: Date, tx?: Tx): Promise<{ from: Date; to: Date }[]> {
    const rows = await (tx ?? this.prisma).cronOutage.findMany({ where: { toAt: { gte: since } }, orderBy: { toAt: "asc" } });
    return rows.map((r) => ({ from: r.fromAt, to: r.toAt }));
  }

  /** A small look at what is waiting, without locks: when the next job is due, and whether manual runs or retries are. */
  async glance(now: Date): Promise<{ nextDueAt: Date | null; pendingRuns: boolean }> {
    const [row] = await this.prisma.$queryRaw<{ next_due: Date | null; pending: boolean }[]>`
      SELECT ${waitingState(now)}`;
    return { nextDueAt: row?.next_due ?? null, pendingRuns: row?.pending ?? false };
  }

  /** Marks runs succeeded, in one statement. */
  async succeedRuns(ids: readonly string[], at: Date, tx: Tx): Promise<void> {
    if (ids.length === 0) return;
    await tx.$executeRaw`
      UPDATE cron_runs SET status = 'succeeded', finished_at = ${at}, error = CASE WHEN kind = 'notify' THEN NULL ELSE error END
       WHERE id = ANY(${[...ids]}::uuid[])`;
  }

  async updateRun(id: string, patch: Partial<Omit<NewCronRun, "id" | "jobId" | "slot" | "kind">>, tx?: Tx): Promise<void> {
    const { deliveryIds, ...rest } = patch;
    await (tx ?? this.prisma).cronRun.update({ where: { id }, data: { ...rest, ...(deliveryIds ? { deliveryIds } : {}) } });
  }

  async getRun(id: string, tx?: Tx): Promise<(CronRun & { job: CronJob }) | null> {
    return (tx ?? this.prisma).cronRun.findUnique({ where: { id }, include: { job: true } });
  }

  async listRuns(jobId: string, paging: { limit: number; offset: number }): Promise<{ runs: CronRun[]; total: number }> {
    const [runs, total] = await Promise.all([
      this.prisma.cronRun.findMany({ where: { jobId }, orderBy: [{ slot: "desc" }, { id: "asc" }], take: paging.limit, skip: paging.offset }),
      this.prisma.cronRun.count({ where: { jobId } }),
    ]);
    return { runs, total };
  }

  /** The most recent run of each job (one indexed read per job, however long its history). */
  async lastRuns(jobIds: readonly string[]): Promise<Map<string, CronRun>> {
    if (jobIds.length === 0) return new Map();
    const ids = await this.prisma.$queryRaw<{ id: string }[]>`
      SELECT l.id::text AS id FROM unnest(${[...jobIds]}::uuid[]) AS j(id)
        CROSS JOIN LATERAL (SELECT id FROM cron_runs WHERE job_id = j.id ORDER BY slot DESC LIMIT 1) l`;
    const runs = await this.prisma.cronRun.findMany({ where: { id: { in: ids.map((r) => r.id) } } });
    return new Map(runs.map((r) => [r.jobId, r]));
  }


}
