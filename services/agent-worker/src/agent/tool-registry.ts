import { z } from "zod";
import type { CronCreateRequest, CronUpdateRequest, OutboundMessage, Result, SessionEventMode } from "@nahida/contracts";
import type { CronJobError } from "@nahida/cron";
import type { OutboxError } from "@nahida/outbox";
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
  signal: AbortSignal;
  /** Every side effect of a tool goes through here, into the run's fenced commit. */
  outbox: ToolOutbox;
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  name: string;
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

  register(...tools: ToolDefinition[]): this {
    for (const tool of tools) this.tools.set(tool.name, tool);
    this.specCache = undefined;
    return this;
  }

  specs(): ToolSpec[] {
    this.specCache ??= [...this.tools.values()].map((tool) => {
      const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.parameters, { io: "input" }) as Record<string, unknown>;
      return { name: tool.name, description: tool.description, parameters };
    });
    return this.specCache;
  }

  async execute(name: string, rawArguments: string, context: ToolContext): Promise<ToolOutcome> {
    const tool = this.tools.get(name);
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
    if (tool.permitted && !tool.permitted(context)) return { ok: false, error: `${name} is not permitted here` };
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
