import { err, ok, type AgentRunExecutor, type BackgroundTask, type Result, type SpawnRefusal, type TaskRef, type TerminalTaskStatus } from "@nahida/contracts";
import type { BackgroundTaskRepository, Database, FinishedTask, NewTask, TaskOutcome, Tx } from "@nahida/db";

/** Why a spawn was refused; `reason` labels the refusal metric. */
export interface TaskLedgerOptions {
  db: Pick<Database, "prisma">;
  tasks: BackgroundTaskRepository;
  executor: AgentRunExecutor<Tx>;
  /** Sub-agents running at once across the deployment (the durable semaphore's size); the same on every replica. */
  maxRunning: number;
  /** Wakes a lane after the commit that appended to it (best effort: the lane sweeper covers a lost wake). */
  wake: (laneKey: string) => Promise<void>;
  /** Counts refused spawns by reason (`nahida_subagent_spawn_refusals_total`). */
  metrics?: {
    spawnRefusals: { inc(labels: { reason: SpawnRefusal["reason"] }): void };
    tasksEnded: { inc(labels: { status: TerminalTaskStatus }): void };
  };
}

/** What a transaction that ended tasks leaves to do once it is in: lanes to wake, runs to abort, ends to count. */
export interface TaskAfterCommit {
  wake: string[];
  stop: TaskRef[];
  ended?: TerminalTaskStatus[];
}

/** Rows one sweep looks at per kind of trouble. */
const SWEEP_BATCH = 100;

/**
 * The orchestration's writes (docs/subagents.md). A spawn commits at once in its own
 * transaction (so the parent can wait for the child in the same turn) under a lock on the
 * parent session, its id derived by the caller from the parent run's first lane item, so a
 * retried run finds its children. Every terminal change frees the task's slot and starts
 * the next queued task in the same transaction. `sweep` ends what no run will: overdue
 * tasks, tasks whose child lane gave up, and children no committed parent run owns.
 */
export class TaskLedger {
  constructor(private readonly o: TaskLedgerOptions) {}

  get tasks(): BackgroundTaskRepository {
    return this.o.tasks;
  }

  /**
   * Writes the task and its child session and starts it if a slot is free; a task with this
   * id already there is returned as it is (`created` false: a retried run adopting it).
   */
  async spawn(task: NewTask, maxChildren: number): Promise<Result<{ task: BackgroundTask; created: boolean }, SpawnRefusal>> {
    const spawned = await this.o.db.prisma.$transaction(async (tx): Promise<Result<{ task: BackgroundTask; created: boolean; after: TaskAfterCommit }, SpawnRefusal>> => {
      if (!(await this.o.tasks.lockParent(task.parentSessionId, tx))) {
        return err({ reason: "parent_gone", message: `session ${task.parentSessionId} no longer exists` });
      }
      const existing = await this.o.tasks.get(task.id, tx);
      if (existing) return ok({ task: existing, created: false, after: { wake: [], stop: [] } });
      if (!(await this.o.tasks.runHoldsItem(task.spawnItemId, task.parentRunId, tx))) {
        return err({ reason: "run_lost", message: "this run no longer holds its lane (another worker took it over); nothing was spawned" });
      }
      const count = await this.o.tasks.countSpawnedBy(task.spawnItemId, tx);
      if (count >= maxChildren) {
        return err({ reason: "children_cap", message: `this turn already started ${count} sub-agents, the most one turn may (AGENT_SUBAGENT_MAX_CHILDREN=${maxChildren})` });
      }
      await this.o.tasks.create(task, tx);
      const after = await this.startQueued(tx);
      return ok({ task: (await this.o.tasks.get(task.id, tx))!, created: true, after });
    });
    if (!spawned.ok) {
      this.o.metrics?.spawnRefusals.inc({ reason: spawned.error.reason });
      return spawned;
    }
    await this.afterCommit(spawned.value.after);
    return ok({ task: spawned.value.task, created: spawned.value.created });
  }

  /**
   * Ends the open ones of `ids` with `outcome` in `tx` and starts queued tasks in the slots
   * freed. Call {@link afterCommit} with the result once `tx` committed.
   */
  async finishIn(tx: Tx, ids: readonly string[], outcome: TaskOutcome): Promise<Required<TaskAfterCommit> & { tasks: FinishedTask[] }> {
    const ended = await this.o.tasks.finish(tx, ids, outcome);
    const started = ended.length > 0 ? await this.startQueued(tx) : { wake: [], stop: [] };
    return {
      tasks: ended,
      ended: ended.map(() => outcome.status),
      wake: [...ended.filter((t) => t.reported).map((t) => t.parentLaneKey), ...started.wake],
      // A run of an ended task may still be going (a timeout, a stop): abort it.
      stop: ended.map((t) => ({ id: t.id, parentSessionId: t.parentSessionId })),
    };
  }

  /** {@link finishIn} in a transaction of its own (operators, sweeps). */
  async finish(ids: readonly string[], outcome: TaskOutcome): Promise<FinishedTask[]> {
    const done = await this.o.db.prisma.$transaction((tx) => this.finishIn(tx, ids, outcome));
    await this.afterCommit(done);
    return done.tasks;
  }

  /** Starts queued tasks while slots are free, in `tx`. */
  async startQueued(tx: Tx): Promise<TaskAfterCommit> {
    const started = await this.o.tasks.promote(tx, this.o.maxRunning);
    const wake: string[] = [];
    for (const task of started) wake.push(...(await this.o.executor.start(task, tx, task.traceparent)).wake);
    return { wake, stop: [] };
  }

  /** Wakes and aborts what a committed transaction asked for; best effort (the sweeps cover a loss). */
  async afterCommit(after: TaskAfterCommit): Promise<void> {
    for (const status of after.ended ?? []) this.o.metrics?.tasksEnded.inc({ status });
    await Promise.all([
      ...[...new Set(after.wake)].map((laneKey) => this.o.wake(laneKey).catch(() => undefined)),
      ...after.stop.map((task) => this.o.executor.stop(task).catch(() => undefined)),
    ]);
  }

  /**
   * One pass over what no run will end: running tasks past their deadline (`timed_out`),
   * tasks whose child lane gave up on them (`lost` when every run died, else `failed`),
   * open children no committed parent run owns (`cancelled`, reported to nobody), and
   * queued tasks a free slot could start; and it aborts again the runs of tasks that ended
   * while their run kept going (the abort is a pub/sub message, which can be lost). Every
   * write is conditional, so replicas sweeping at once end each task once.
   */
  async sweep(): Promise<{ timedOut: number; lost: number; orphaned: number }> {
    const overdue = await this.o.tasks.overdue(SWEEP_BATCH);
    let timedOut = 0;
    for (const task of overdue) {
      const ended = await this.finish([task.id], { status: "timed_out", error: `ran past its timeout of ${Math.round(task.timeoutMs / 1000)} s` });
      timedOut += ended.length;
    }
    let lost = 0;
    for (const task of await this.o.tasks.abandoned(SWEEP_BATCH)) {
      const gaveUp = task.error?.startsWith("gave up after") ?? false;
      const ended = await this.finish([task.id], { status: gaveUp ? "lost" : "failed", error: `its run failed for good: ${task.error ?? "unknown error"}` });
      lost += ended.length;
    }
    const orphans = await this.o.tasks.orphans(SWEEP_BATCH);
    const orphaned = (await this.finish(orphans, { status: "cancelled", error: "the parent run that spawned it did not complete", consumedBy: "discarded" })).length;
    const started = await this.o.db.prisma.$transaction((tx) => this.startQueued(tx));
    await this.afterCommit({ ...started, stop: await this.o.tasks.endedButRunning(SWEEP_BATCH) });
    return { timedOut, lost, orphaned };
  }
}
