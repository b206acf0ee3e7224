import { z } from "zod";
import type { BackgroundTask, CronCreateRequest, CronUpdateRequest, OutboundMessage, Result, SessionEventMode, SubagentSpec } from "@nahida/contracts";
import type { CronJobError } from "@nahida/cron";
import type { OutboxError } from "@nahida/outbox";
import type { SpawnRefusal } from "@nahida/tasks";
import type { ToolSpec } from "./llm.client";

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
  send(request: { target: string; message: OutboundMessage; recordIn?: string }): Promise<Result<{ deliveryId: string }, OutboxError>>;
  /** An event into another session (`sessions_send`), written in the run's commit. */
  sendEvent(event: ToolSessionEvent): Promise<Result<{ eventId: string }, OutboxError>>;
  /**
   * The same, written at once so that its answer can be waited for. Its id is derived from
   * the run's first lane item and the call, so a retried run finds the event it sent (and
   * its answer) instead of sending it again.
   */
  sendEventNow(event: ToolSessionEvent): Promise<Result<{ eventId: string }, OutboxError>>;
  /** A cron job owned by the calling session; checked now (schedule, target, quota), created in the commit. */
  createCron(request: CronCreateRequest): Promise<Result<{ jobId: string; nextRunAt: Date | null }, CronJobError>>;
  /** An edit of a cron job, checked now and applied in the commit. */
  updateCron(jobId: string, request: CronUpdateRequest): Promise<Result<void, CronJobError>>;
  /** Deletes a cron job in the commit. */
  deleteCron(jobId: string): Promise<Result<void, CronJobError>>;
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
  /** The chain depth of the new event (the caller's own depth + 1). */
  depth: number;
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

/** A tool result as the model sees it: always JSON, errors included. */
export type ToolOutcome = { ok: true; result: unknown } | { ok: false; error: string };

const MAX_RESULT_CHARS = 16_000;

/**
 * Tools by name. Arguments are parsed and validated here; any problem (unknown tool, bad
 * JSON, schema violation, refusal, a throwing tool) becomes a result the model can read and
 * correct, never an exception out of the agent loop.
 */
export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();
  /** JSON schemas are derived once per registration, not on every model call. */
  private specCache: ToolSpec[] | undefined;

  private readonly aliases = new Map<string, string>();

  register(...tools: ToolDefinition[]): this {
    for (const tool of tools) {
      this.tools.set(tool.name, tool);
      for (const alias of tool.aliases ?? []) this.aliases.set(alias, tool.name);
    }
    this.specCache = undefined;
    return this;
  }

  /** The names of the registered tools (not their aliases). */
  names(): string[] {
    return [...this.tools.keys()];
  }

  /** The tools the model is offered; with `context`, only those this call may use. */
  specs(context?: ToolContext): ToolSpec[] {
    this.specCache ??= [...this.tools.values()].map((tool) => {
      const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.parameters, { io: "input" }) as Record<string, unknown>;
      return { name: tool.name, description: tool.description, parameters };
    });
    if (!context) return this.specCache;
    return this.specCache.filter((spec) => this.refusal(this.tools.get(spec.name)!, context) === null);
  }

  /** Why `context` may not use `tool`; null when it may. */
  private refusal(tool: ToolDefinition, context: ToolContext): string | null {
    if (context.allowedTools && !context.allowedTools.includes(tool.name)) return `${tool.name} is not among the tools this sub-agent was given`;
    if (tool.permitted && !tool.permitted(context)) {
      return context.subagent ? `${tool.name} is not permitted to a sub-agent (no spawning, message or sessions_send)` : `${tool.name} is not permitted here`;
    }
    return null;
  }

  async execute(name: string, rawArguments: string, context: ToolContext): Promise<ToolOutcome> {
    const tool = this.tools.get(name) ?? this.tools.get(this.aliases.get(name) ?? "");
    if (!tool) return { ok: false, error: `unknown tool ${JSON.stringify(name)}; available: ${[...this.tools.keys()].join(", ")}` };
    let json: unknown;
    try {
      json = rawArguments.trim() === "" ? {} : JSON.parse(rawArguments);
    } catch {
      return { ok: false, error: `arguments are not valid JSON: ${rawArguments.slice(0, 200)}` };
    }
    const parsed = tool.parameters.safeParse(json);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(arguments)"}: ${i.message}`).join("; ");
      return { ok: false, error: `invalid arguments for ${name}: ${issues}` };
    }
    const refused = this.refusal(tool, context);
    if (refused !== null) return { ok: false, error: refused };
    try {
      return { ok: true, result: await tool.execute(parsed.data, context) };
    } catch (error) {
      if (context.signal.aborted) throw error;
      return { ok: false, error: `${name} failed: ${(error as Error).message}` };
    }
  }

  /** The tool message content for an outcome, bounded so one tool cannot flood the context. */
  static render(outcome: ToolOutcome): string {
    const text = JSON.stringify(outcome.ok ? outcome.result ?? null : { error: outcome.error });
    return text.length > MAX_RESULT_CHARS ? `${text.slice(0, MAX_RESULT_CHARS)}… [truncated]` : text;
  }
}
