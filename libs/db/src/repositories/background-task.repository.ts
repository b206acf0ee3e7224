import { encodeLaneItem, taskLaneKey, type BackgroundTask, type TaskConsumer, type TaskContextMode, type TaskRef, type TaskStatus, type TerminalTaskStatus } from "@nahida/contracts";
import type { PrismaClient, Tx } from "../database";
import { Prisma, type BackgroundTask as TaskRow } from "../generated/prisma/client";
import { laneAppendCtes } from "../lane-append";
import { pgJson } from "../statements";

/** A task as `spawn` writes it; its child session is created with it. `traceparent`: the spawn's span, continued by the child's run. */
export type NewTask = Pick<
  BackgroundTask,
  "id" | "parentSessionId" | "parentLaneKey" | "spawnItemId" | "parentRunId" | "childSessionId" | "task" | "label" | "instructions" | "contextMode" | "forkContext" | "tools" | "timeoutMs"
> & { traceparent: string | null };

/** How a task ended, written once by whoever gets there first (`finish`). */
export interface TaskOutcome {
  status: TerminalTaskStatus;
  result?: string | null;
  error?: string | null;
  /** Set when nobody is to hear of it (the parent stopped it, or no parent run owns it): no result item is appended. */
  consumedBy?: TaskConsumer;
  /** The run that consumed it, with `consumedBy`. */
  consumedRunId?: string;
  tokens?: { input: number; output: number };
}

/** A task `finish` ended: its parent lane got its result item unless it was consumed at once. */
export interface FinishedTask extends TaskRef {
  parentLaneKey: string;
  reported: boolean;
}

/** A task `promote` started: its executor appends it to its child lane in the same transaction. */
export interface StartedTask extends TaskRef {
  traceparent: string | null;
}

const OPEN: TaskStatus[] = ["queued", "running"];

export function taskOf(row: TaskRow): BackgroundTask {
  return {
    ...row,
    contextMode: row.contextMode as TaskContextMode,
    tools: Array.isArray(row.tools) ? (row.tools as string[]) : null,
    status: row.status as TaskStatus,
    consumedBy: row.consumedBy as TaskConsumer | null,
  };
}

/**
 * The background task ledger (`background_tasks`, docs/subagents.md). Every change of
 * state is one conditional UPDATE: a terminal status is written once (`status IN
 * (queued, running)`), a result consumed once (`consumed_by IS NULL`), so two writers
 * racing (a child's commit and the timeout sweep, two replicas' sweeps) cannot both win.
 */
export class BackgroundTaskRepository {
  constructor(private readonly prisma: PrismaClient) {}

  async get(id: string, tx?: Tx): Promise<BackgroundTask | null> {
    const row = await (tx ?? this.prisma).backgroundTask.findUnique({ where: { id } });
    return row ? taskOf(row) : null;
  }

  async getMany(ids: readonly string[]): Promise<BackgroundTask[]> {
    if (ids.length === 0) return [];
    return (await this.prisma.backgroundTask.findMany({ where: { id: { in: [...ids] } } })).map(taskOf);
  }

  /** A session's tasks, newest first. */
  async listByParent(parentSessionId: string, limit: number): Promise<BackgroundTask[]> {
    const rows = await this.prisma.backgroundTask.findMany({ where: { parentSessionId }, orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: limit });
    return rows.map(taskOf);
  }

  /** The task a child session works on (null for any other session). */
  async ofChild(childSessionId: string): Promise<BackgroundTask | null> {
    const row = await this.prisma.backgroundTask.findUnique({ where: { childSessionId } });
    return row ? taskOf(row) : null;
  }

  /**
   * Serializes the spawns of one parent session until `tx` ends (the per-run cap is counted
   * under it); false when the session is gone.
   */
  async lockParent(parentSessionId: string, tx: Tx): Promise<boolean> {
    const rows = await tx.$queryRaw<unknown[]>`SELECT 1 FROM sessions WHERE id = ${parentSessionId}::uuid FOR UPDATE`;
    return rows.length === 1;
  }

  /** Whether the lane item that names a parent run is still that run's (a run that lost its lane must not spawn). */
  async runHoldsItem(spawnItemId: string, runId: string, tx: Tx): Promise<boolean> {
    const rows = await tx.$queryRaw<unknown[]>`
      SELECT 1 FROM lane_items WHERE id = ${spawnItemId}::uuid AND run_id = ${runId}::uuid AND status = 'running'`;
    return rows.length === 1;
  }

  /**
   * Tasks spawned by the parent run named by its first lane item, every attempt of it, but
   * not those already given up (an earlier attempt's child a retry asked otherwise of).
   */
  async countSpawnedBy(spawnItemId: string, tx: Tx): Promise<number> {
    return tx.backgroundTask.count({ where: { spawnItemId, OR: [{ consumedBy: null }, { consumedBy: { not: "discarded" } }] } });
  }

  /** Writes the task and its child session (chatless, its own lane, the parent as parent). */
  async create(task: NewTask, tx: Tx): Promise<BackgroundTask> {
    await tx.session.create({
      data: { id: task.childSessionId, laneKey: taskLaneKey(task), parentId: task.parentSessionId, title: task.label ?? task.task.slice(0, 80) },
    });
    const row = await tx.backgroundTask.create({ data: { ...task, tools: task.tools ? pgJson(task.tools) : Prisma.DbNull } });
    return taskOf(row);
  }

  /**
   * The durable semaphore: starts the oldest queued tasks while fewer than `maxRunning`
   * run across the deployment. A transaction-scoped advisory lock (per schema) serializes
   * every promotion, so the count read after taking it includes every commit before: two
   * replicas can never both take the last slot. A slot is freed by the terminal UPDATE.
   */
  async promote(tx: Tx, maxRunning: number): Promise<StartedTask[]> {
    await tx.$queryRaw`SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.background_tasks.slots'))::text`;
    return tx.$queryRaw<StartedTask[]>`
      WITH free AS (
        SELECT greatest(${maxRunning}::int - count(*)::int, 0) AS n FROM background_tasks WHERE status = 'running'
      ), next AS (
        -- SKIP LOCKED: a queued task being ended (a stop) holds its row and waits for this
        -- lock; waiting for its row here would deadlock with it.
        SELECT id FROM background_tasks WHERE status = 'queued'
         ORDER BY created_at, id LIMIT (SELECT n FROM free) FOR UPDATE SKIP LOCKED
      )
      UPDATE background_tasks t
         SET status = 'running', started_at = now(), deadline_at = now() + t.timeout_ms * interval '1 millisecond'
        FROM next WHERE t.id = next.id
      RETURNING t.id::text AS id, t.parent_session_id::text AS "parentSessionId", t.traceparent`;
  }

  /**
   * Ends open tasks with `outcome`; tasks already ended keep their first outcome. Each one
   * ended here that nobody consumed at once gets its `subagent_result` item in its parent's
   * lane, in this transaction (one per task: `(kind, ref)` is unique).
   */
  async finish(tx: Tx, ids: readonly string[], outcome: TaskOutcome): Promise<FinishedTask[]> {
    if (ids.length === 0) return [];
    // The parents' lane rows first, in key order: a parent's commit locks its lane row and
    // then its tasks' rows (adopting, consuming), so locking a task row first and its
    // parent's lane second (to append the result) could deadlock with it.
    await tx.$queryRaw`
      SELECT 1 FROM lanes WHERE key IN (
        SELECT parent_lane_key FROM background_tasks WHERE id = ANY(${[...ids]}::uuid[]) AND status = ANY(${OPEN}::text[]))
       ORDER BY key FOR UPDATE`;
    const ended = await tx.$queryRaw<(TaskRef & { parentLaneKey: string })[]>`
      UPDATE background_tasks
         SET status = ${outcome.status}, result = ${outcome.result ?? null}, error = ${outcome.error ?? null}, finished_at = now(),
             input_tokens = input_tokens + ${outcome.tokens?.input ?? 0}::int, output_tokens = output_tokens + ${outcome.tokens?.output ?? 0}::int,
             consumed_by = ${outcome.consumedBy ?? null}, consumed_run_id = ${outcome.consumedRunId ?? null}::uuid,
             consumed_at = CASE WHEN ${outcome.consumedBy ?? null}::text IS NULL THEN NULL ELSE now() END
       WHERE id = ANY(${[...ids]}::uuid[]) AND status = ANY(${OPEN}::text[])
      RETURNING id::text AS id, parent_session_id::text AS "parentSessionId", parent_lane_key AS "parentLaneKey"`;
    const reported = outcome.consumedBy === undefined;
    if (reported) {
      for (const task of ended) {
        const item = encodeLaneItem({ kind: "subagent_result", taskId: task.id });
        await tx.$queryRaw`WITH ${laneAppendCtes({ laneKey: task.parentLaneKey, kind: item.kind, refId: Prisma.sql`${item.refId}::text`, traceparent: null })} SELECT 1`;
      }
    }
    return ended.map((t) => ({ ...t, reported }));
  }

  /** A committed parent run owns these tasks (it spawned or adopted them). */
  async adopt(tx: Tx, ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await tx.backgroundTask.updateMany({ where: { id: { in: [...ids] } }, data: { adopted: true } });
  }

  /** The parent took these results; a result already taken stays with its first consumer. */
  async consume(tx: Tx, ids: readonly string[], by: TaskConsumer, runId: string): Promise<void> {
    if (ids.length === 0) return;
    await tx.backgroundTask.updateMany({ where: { id: { in: [...ids] }, consumedBy: null }, data: { consumedBy: by, consumedRunId: runId, consumedAt: new Date() } });
  }

  /**
   * A parent run yields: every result of the session's own tasks that nobody took yet now
   * waits for the rest of them, and resumes the parent once all have ended.
   */
  async yieldFor(tx: Tx, parentSessionId: string, yieldId: string): Promise<void> {
    await tx.backgroundTask.updateMany({ where: { parentSessionId, adopted: true, consumedBy: null }, data: { yieldId } });
  }

  /**
   * Of the yields these tasks belong to (or `yieldIds`), those with results nobody took
   * and none of their tasks open: nothing else will resume them (their last task was taken
   * inline or stopped, or every one had ended before the yield), so the caller appends a
   * `subagent_resume` item to their parent's lane.
   */
  async resumableYields(tx: Tx, taskIds: readonly string[], yieldIds: readonly string[]): Promise<{ yieldId: string; parentLaneKey: string }[]> {
    return tx.$queryRaw<{ yieldId: string; parentLaneKey: string }[]>`
      WITH yields AS (
        SELECT DISTINCT yield_id AS id FROM background_tasks WHERE id = ANY(${[...taskIds]}::uuid[]) AND yield_id IS NOT NULL
        UNION SELECT unnest(${[...yieldIds]}::uuid[])
      )
      SELECT t.yield_id::text AS "yieldId", min(t.parent_lane_key) AS "parentLaneKey"
        FROM background_tasks t JOIN yields y ON t.yield_id = y.id
       WHERE t.consumed_by IS NULL
       GROUP BY t.yield_id
      HAVING bool_and(t.status NOT IN ('queued', 'running'))`;
  }

  /** A yield's tasks whose results nobody took yet. */
  async yieldGroup(yieldId: string): Promise<BackgroundTask[]> {
    return (await this.prisma.backgroundTask.findMany({ where: { yieldId, consumedBy: null }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] })).map(taskOf);
  }

  /** The session's tasks whose results nobody took yet, oldest first. */
  async unconsumedOf(parentSessionId: string): Promise<BackgroundTask[]> {
    return (await this.prisma.backgroundTask.findMany({ where: { parentSessionId, consumedBy: null }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] })).map(taskOf);
  }

  /** Tasks of every session of a lane whose results nobody took yet, open or ended (what `/stop` ends or silences). */
  async untakenOfLane(parentLaneKey: string): Promise<BackgroundTask[]> {
    return (await this.prisma.backgroundTask.findMany({ where: { parentLaneKey, consumedBy: null } })).map(taskOf);
  }

  /** Running tasks that ended (stopped, timed out) while their child's run still holds its item: its abort may have been lost. */
  async endedButRunning(limit: number): Promise<TaskRef[]> {
    // From the running items (the partial index of unfinished lane items, which `done_at IS
    // NULL` selects) to their tasks by key.
    return this.prisma.$queryRaw<TaskRef[]>`
      WITH running AS MATERIALIZED (
        SELECT ref_id FROM lane_items
         WHERE done_at IS NULL AND kind = 'subagent_task' AND status = 'running' AND ref_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
      )
      SELECT t.id::text AS id, t.parent_session_id::text AS "parentSessionId"
        FROM running r JOIN background_tasks t ON t.id = r.ref_id::uuid
       WHERE t.status IN ('cancelled', 'timed_out', 'lost')
       LIMIT ${limit}`;
  }

  /** Running tasks past their deadline. */
  async overdue(limit: number): Promise<BackgroundTask[]> {
    const rows = await this.prisma.backgroundTask.findMany({ where: { status: "running", deadlineAt: { lt: new Date() } }, take: limit });
    return rows.map(taskOf);
  }

  /** Running tasks whose child lane gave up on their item (its runs kept dying or failing), with the lane's error. */
  async abandoned(limit: number): Promise<{ id: string; error: string | null }[]> {
    return this.prisma.$queryRaw<{ id: string; error: string | null }[]>`
      SELECT t.id::text AS id, li.error FROM background_tasks t
        JOIN lane_items li ON li.kind = 'subagent_task' AND li.ref_id = t.id::text AND li.status = 'failed'
       WHERE t.status = 'running' LIMIT ${limit}`;
  }

  /**
   * Open tasks no parent run will own: the run that spawned them ended (its lane item is
   * done or failed) without adopting them (it was stopped, failed for good, or lost its lane
   * to a retry that chose differently).
   */
  async orphans(limit: number): Promise<string[]> {
    const rows = await this.prisma.$queryRaw<{ id: string }[]>`
      SELECT t.id::text AS id FROM background_tasks t JOIN lane_items li ON li.id = t.spawn_item_id
       WHERE t.status IN ('queued', 'running') AND NOT t.adopted AND li.status IN ('done', 'failed') LIMIT ${limit}`;
    return rows.map((r) => r.id);
  }

  /** Open tasks by status (`queued`, `running`; both always present), for the metrics gauge: read off the partial index of open tasks. */
  async countOpen(): Promise<{ status: string; count: number }[]> {
    const rows = await this.prisma.$queryRaw<{ status: string; count: number }[]>`
      SELECT status, count(*)::int AS count FROM background_tasks WHERE status IN ('queued', 'running') GROUP BY status`;
    return OPEN.map((status) => ({ status, count: rows.find((r) => r.status === status)?.count ?? 0 }));
  }
}
