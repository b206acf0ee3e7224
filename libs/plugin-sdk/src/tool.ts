import type { z } from "zod";
import type { BackgroundTask, CronCreateRequest, CronUpdateRequest, ErrorCode, OutboundMessage, Result, SessionEventMode, SpawnRefusal, SubagentSpec } from "@nahida/contracts";

/** Why the host refused an effect: a stable code and a message the model can read. */
export interface EffectRefusal {
  code: Extract<ErrorCode, "invalid_address" | "not_found" | "bad_request" | "conflict" | "forbidden">;
  message: string;
}

/**
 * What a tool may do to the world. Nothing happens when the tool calls: the request is
 * checked at once (so the model hears about a bad target now) and written in the run's
 * fenced commit, so a retried or taken-over run never does it twice and a run that does
 * not commit does nothing.
 */
export interface ToolOutbox {
  /**
   * A message to any registered chat; the delivery id is valid once the run commits. With
   * `recordIn`, the message is also written into that session's history as a
   * `cross_session_message` event.
   */
  send(request: { target: string; message: OutboundMessage; recordIn?: string }): Promise<Result<{ deliveryId: string }, EffectRefusal>>;
  /** An event into another session (`sessions_send`), written in the run's commit. */
  sendEvent(event: ToolSessionEvent): Promise<Result<{ eventId: string }, EffectRefusal>>;
  /**
   * The same, written at once so that its answer can be waited for. Its id is derived from
   * the run's first lane item and the call, so a retried run finds the event it sent (and
   * its answer) instead of sending it again.
   */
  sendEventNow(event: ToolSessionEvent): Promise<Result<{ eventId: string }, EffectRefusal>>;
  /** A cron job owned by the calling session; checked now (schedule, target, quota), created in the commit. */
  createCron(request: CronCreateRequest): Promise<Result<{ jobId: string; nextRunAt: Date | null }, EffectRefusal>>;
  /** An edit of a cron job, checked now and applied in the commit. */
  updateCron(jobId: string, request: CronUpdateRequest): Promise<Result<void, EffectRefusal>>;
  /** Deletes a cron job in the commit. */
  deleteCron(jobId: string): Promise<Result<void, EffectRefusal>>;
  /**
   * Starts a sub-agent at once (its task committed in its own transaction, so it can be
   * waited for in this turn). Its id is derived from the run's first lane item and the
   * call, so a retried run finds the child it started instead of starting another; the
   * run owns it once it commits, and a run that never commits has it cancelled.
   */
  spawnTask(spec: SubagentSpec): Promise<Result<{ task: BackgroundTask; created: boolean }, SpawnRefusal>>;
  /**
   * Takes these finished children's results in the run's commit (`agent_wait`): no announce
   * turn follows. Returns the ones taken now; the rest this run had already taken (an
   * announce or resume turn earlier in the run).
   */
  takeResults(taskIds: readonly string[]): string[];
  /** Every result of this session's children nobody took yet waits to resume the session together (`agent_yield`). */
  yieldForChildren(): void;
  /** Ends these children (`cancelled`) in the run's commit and aborts their runs after it; nobody is told. */
  stopTasks(taskIds: readonly string[]): void;
  /**
   * This session's children whose results nobody has taken, as this run leaves them: owned
   * (adopted, or spawned by this run), not taken by this run's `agent_wait`, not stopped by it.
   */
  openChildren(): Promise<BackgroundTask[]>;
}


/** An event a tool sends into another session. */
export interface ToolSessionEvent {
  sessionId: string;
  content: string;
  mode: SessionEventMode;
}

/** What a tool may know about the run that calls it. */
export interface ToolContext {
  sessionId: string;
  chatAddress: string | null;
  runId: string;
  /** The lane the run holds: a target in the same lane cannot run until this run ends. */
  laneKey: string;
  /** How many agent events led to this turn (0: a user's message, a scheduled task, an operator). */
  eventDepth: number;
  /** A sub-agent's session (it has a parent): no `message`, `sessions_send` or spawning. */
  subagent: boolean;
  /** The tools this call may use, when narrowed (a sub-agent spawned with `tools`); null: every permitted one. */
  allowedTools: readonly string[] | null;
  /** Ends the agent call after the current tool calls: no further model call, no answer (`agent_yield`). */
  endTurn(): void;
  signal: AbortSignal;
  /** Every side effect of a tool goes through here, into the run's fenced commit. */
  outbox: ToolOutbox;
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
  /** Other names a call may use (a peer's name for the same tool); not offered to the model. */
  aliases?: string[];
  description: string;
  parameters: S;
  /** Return false to refuse the call (the model is told it is not permitted). */
  permitted?: (context: ToolContext) => boolean;
  execute(args: z.infer<S>, context: ToolContext): Promise<unknown>;
}

export const defineTool = <S extends z.ZodType>(definition: ToolDefinition<S>): ToolDefinition<S> => definition;

