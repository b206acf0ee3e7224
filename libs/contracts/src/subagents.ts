import { z } from "zod";

/**
 * The Agent Orchestration Contract (seed 002 §6, SPEC §7, docs/subagents.md): a run is a
 * session's main run or a sub-agent's; a sub-agent's work is a background task in the
 * ledger, run by an executor (the lanes today; a remote node later behind the same
 * interface).
 */

/** A main run (a chat's, a cron job's, an event's) or a sub-agent's run. */
export const AgentRunKind = z.enum(["main", "subagent"]);
export type AgentRunKind = z.infer<typeof AgentRunKind>;

/**
 * Where a task stands. `queued`: waiting for a slot under the deployment's cap; `running`:
 * its child session's lane has its item; the rest are terminal and set once, by the runtime
 * (the child's commit, the timeout sweep, a stop), never from what a model wrote.
 */
export const TaskStatus = z.enum(["queued", "running", "succeeded", "failed", "timed_out", "cancelled", "lost"]);
export type TaskStatus = z.infer<typeof TaskStatus>;

export const TERMINAL_TASK_STATUSES = ["succeeded", "failed", "timed_out", "cancelled", "lost"] as const satisfies readonly TaskStatus[];
export type TerminalTaskStatus = (typeof TERMINAL_TASK_STATUSES)[number];
export const isTerminalTask = (status: string): status is TerminalTaskStatus => (TERMINAL_TASK_STATUSES as readonly string[]).includes(status);

/**
 * Who took a finished task's result, exactly once: an `agent_wait` inline (`wait`), the
 * resumed turn of a yielded parent (`resume`), an announce turn (`announce`); or nobody
 * needed it: the parent stopped it itself (`stopped`), or no committed parent run ever
 * owned it (`discarded`).
 */
export const TaskConsumer = z.enum(["wait", "resume", "announce", "stopped", "discarded"]);
export type TaskConsumer = z.infer<typeof TaskConsumer>;

/** `isolated`: the child sees only its task; `fork`: also the parent's recent conversation, rendered and budgeted. */
export const TaskContextMode = z.enum(["isolated", "fork"]);
export type TaskContextMode = z.infer<typeof TaskContextMode>;

/** What a parent asks a sub-agent to do (`agent_spawn`). */
export const SubagentSpec = z.object({
  task: z.string().min(1).max(20_000),
  label: z.string().min(1).max(100).optional(),
  instructions: z.string().min(1).max(20_000).optional(),
  context: TaskContextMode.default("isolated"),
  timeoutSeconds: z.number().int().min(1).max(86_400).optional(),
  /** Narrows the child's tools to these names (never widens past the parent's minus the denylist). */
  tools: z.array(z.string().min(1).max(64)).max(64).optional(),
});
export type SubagentSpec = z.infer<typeof SubagentSpec>;

/** One agent run as the orchestration sees it: a lane run of a main session or of a sub-agent's session. */
export interface AgentRun {
  runId: string;
  kind: AgentRunKind;
  /** 0 for a main run, 1 for a sub-agent (one level only). */
  depth: number;
  sessionId: string;
}

/** A background task: the ledger row of one sub-agent (`background_tasks`). */
export interface BackgroundTask {
  id: string;
  parentSessionId: string;
  /** The parent's lane, where the result is reported as a `subagent_result` item. */
  parentLaneKey: string;
  /** The parent run's first lane item: a retried parent run finds its children by it. */
  spawnItemId: string;
  /** The run that spawned it (its first attempt). */
  parentRunId: string;
  /** Whether a committed parent run owns it; one no committed run owns is cancelled. */
  adopted: boolean;
  childSessionId: string;
  task: string;
  label: string | null;
  instructions: string | null;
  contextMode: TaskContextMode;
  /** The parent's conversation given to a `fork` child, rendered at spawn. */
  forkContext: string | null;
  tools: string[] | null;
  depth: number;
  status: TaskStatus;
  result: string | null;
  error: string | null;
  timeoutMs: number;
  deadlineAt: Date | null;
  /** The yield (a parent run, in one session) waiting for it: its result resumes the parent with the rest of that yield. */
  yieldId: string | null;
  consumedBy: TaskConsumer | null;
  consumedAt: Date | null;
  inputTokens: number;
  outputTokens: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/**
 * Runs a task's child session somewhere. The local executor appends the task to the child
 * session's lane in the transaction that starts it (`Tx`: the database's), and interrupts
 * the lane to stop it; a remote executor would hand it to another node. Reserved: only the
 * local executor exists.
 */
export interface AgentRunExecutor<Tx> {
  readonly name: string;
  /** Starts the task, in the transaction that marks it running; returns the lanes to wake after the commit. */
  start(task: TaskRef, tx: Tx, traceparent: string | null): Promise<{ wake: string[] }>;
  /** Aborts the task's run in progress (after its terminal state is committed). */
  stop(task: TaskRef): Promise<void>;
}

/** What names a task's child lane. */
export type TaskRef = Pick<BackgroundTask, "id" | "parentSessionId">;

/** A child session's lane, `session:<parent session>/sub:<task id>`: its own, so children run beside each other and their parent. */
export const taskLaneKey = (task: TaskRef) => `session:${task.parentSessionId}/sub:${task.id}`;

/** A task as operators read it (`GET /api/tasks/:id`, `nahida tasks show`). */
export const TaskView = z
  .object({
    task_id: z.uuid(),
    parent_session_id: z.uuid(),
    child_session_id: z.uuid(),
    parent_run_id: z.uuid(),
    label: z.string().nullable(),
    task: z.string(),
    context: TaskContextMode,
    status: TaskStatus,
    result: z.string().nullable(),
    error: z.string().nullable(),
    /** Who took the result (null: nobody yet). */
    consumed_by: TaskConsumer.nullable(),
    /** Whether a committed parent run owns it. */
    adopted: z.boolean(),
    timeout_seconds: z.number(),
    deadline_at: z.iso.datetime().nullable(),
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    created_at: z.iso.datetime(),
    started_at: z.iso.datetime().nullable(),
    finished_at: z.iso.datetime().nullable(),
  })
  .meta({ id: "Task" });
export type TaskView = z.infer<typeof TaskView>;

export const taskView = (t: BackgroundTask): TaskView => ({
  task_id: t.id,
  parent_session_id: t.parentSessionId,
  child_session_id: t.childSessionId,
  parent_run_id: t.parentRunId,
  label: t.label,
  task: t.task,
  context: t.contextMode,
  status: t.status,
  result: t.result,
  error: t.error,
  consumed_by: t.consumedBy,
  adopted: t.adopted,
  timeout_seconds: Math.round(t.timeoutMs / 1000),
  deadline_at: t.deadlineAt?.toISOString() ?? null,
  input_tokens: t.inputTokens,
  output_tokens: t.outputTokens,
  created_at: t.createdAt.toISOString(),
  started_at: t.startedAt?.toISOString() ?? null,
  finished_at: t.finishedAt?.toISOString() ?? null,
});

export const TaskList = z.object({ tasks: z.array(TaskView) }).meta({ id: "TaskList" });
export type TaskList = z.infer<typeof TaskList>;

/** `POST /api/tasks/:id/stop`: `stopped` when this request ended it, else the state it had already reached. */
export const TaskStopped = z.object({ task_id: z.uuid(), stopped: z.boolean(), status: TaskStatus }).meta({ id: "TaskStopped" });
export type TaskStopped = z.infer<typeof TaskStopped>;

/** Why a spawn was refused: the parent session is gone, the run lost its lane, the run's cap of children is reached, or the calling plugin may not start sub-agents. */
export type SpawnRefusal =
  | { reason: "parent_gone"; message: string }
  | { reason: "run_lost"; message: string }
  | { reason: "children_cap"; message: string }
  | { reason: "forbidden"; message: string };
