import type { Cluster, Redis } from "ioredis";
import type { NewTurn } from "@nahida/db";
import { RunStoppedError } from "@nahida/lanes";
import type { TypedQueue } from "@nahida/queue";
import type { AgentLoopResult, RunAgent } from "../agent/agent-loop";
import { applyReplySignals } from "../agent/reply-signals";
import { ContextOverflowError } from "../agent/llm.client";
import type { Compactor } from "../compaction/compactor";
import type { ContextBuilder, RenderableTurn } from "../context/context-builder";
import type { Run } from "./run";
import { createToolOutbox, type ToolOutboxOptions } from "./tool-outbox";
import { showTyping } from "./typing";

/**
 * What an agent call came to:
 * - `text`: the answer to send (after the reply signals);
 * - `silent`: nothing to send (stopped by `/stop`, or the model suppressed its reply);
 * - `failed`: the model could not be reached on the items' last attempt (answer with an apology);
 * - `no_llm`: no language model is configured.
 */
export type AgentAnswer = { kind: "text"; text: string } | { kind: "silent" } | { kind: "failed"; reason?: string; reply?: string } | { kind: "no_llm" };

/** What the chat hears when a prompt still overflows the model's window after a compaction. */
export const OVERFLOW_REPLY = "This conversation no longer fits the language model's context window, even summarized. Start a new one with /new.";

/**
 * Why an agent call left nothing to answer with, as recorded on what it was answering (a
 * cron run, an agent event); null when it answered or chose to stay silent.
 */
export function unanswered(answer: AgentAnswer): string | null {
  if (answer.kind === "no_llm") return "no language model is configured (OPENAI_BASE_URL / OPENAI_API_KEY)";
  if (answer.kind === "failed") return answer.reason ?? "the language model could not be reached";
  return null;
}

/** How one agent call may act. */
export interface AgentCallOptions {
  /** How many agent events led to this turn (the loop guard of `sessions_send`). Default 0. */
  eventDepth?: number;
  /** The tools this call may use, narrowing the permitted ones (a sub-agent spawned with `tools`). */
  allowedTools?: readonly string[] | null;
}

/** Appends `prompt` to the session and runs the agent over its history and the run's new turns. */
export type AgentCaller = (run: Run, sessionId: string, prompt: NewTurn[], options: AgentCallOptions) => Promise<AgentAnswer>;

export interface AgentCallerOptions extends ToolOutboxOptions {
  /** Null when no LLM is configured: commands still work, the rest is answered with a hint. */
  runAgent: RunAgent | null;
  contextBuilder: ContextBuilder;
  /** For the best-effort "typing…" indicator, which has no row. */
  outbound: TypedQueue<"outbound">;
  /** Marks a run `/stop` stopped, for the `/stop` that follows ({@link stoppedKey}). */
  redis: Redis | Cluster;
  prefix: string;
  /** The lane's attempt limit; on the last attempt an LLM failure is answered, not retried. */
  maxAttempts: number;
  /** History compaction; without it the prompt is the history as read (docs/compaction.md). */
  compactor?: Compactor;
}

/** Key marking that a lane's run was stopped, read by the `/stop` that caused it. */
export const stoppedKey = (prefix: string, laneKey: string) => `${prefix}:lanes:stopped:${laneKey}`;

const STOPPED_MARK_MS = 10 * 60_000;

/**
 * The one agent call every kind uses: the prompt turns join the session, the model sees the
 * history and every turn this run added, the tools' effects join the run only if the call
 * returned, and what the model did is stored as turns.
 */
export function createAgentCaller(o: AgentCallerOptions): AgentCaller {
  return async function callAgent(run, sessionId, prompt, options) {
    const earlier = run.pendingTurns(sessionId);
    run.appendTurns(sessionId, prompt);
    if (!o.runAgent) return { kind: "no_llm" };
    const fresh: RenderableTurn[] = [...earlier, ...prompt].map((t) => ({ role: t.role, content: t.content, metadata: t.metadata ?? {}, ...(t.source ? { source: t.source } : {}) }));
    const history = await run.history(sessionId);
    let prepared = o.compactor
      ? await o.compactor.prepare(run, sessionId, history, fresh, "threshold")
      : { history, messages: await o.contextBuilder.build(history.turns, fresh, history.compaction), changed: false };
    if (run.lane.signal.reason instanceof RunStoppedError) return { kind: "silent" };
    const immediateCalls = new Map(run.immediateCalls);
    let result = await invoke(o, run, sessionId, prepared.messages, options);
    // The API's count is the one that matters: compact once (or cut) and try once more.
    if (result.kind === "overflow" && o.compactor) {
      prepared = await o.compactor.prepare(run, sessionId, prepared.history, fresh, "overflow");
      // The same prompt again would only overflow again (the run's new turns alone are too long).
      if (prepared.changed) {
        // As in a retried run: the retry's n-th waited-for event or spawn is the first attempt's, found again.
        run.immediateCalls.clear();
        for (const [key, n] of immediateCalls) run.immediateCalls.set(key, n);
        result = await invoke(o, run, sessionId, prepared.messages, options);
      }
    }
    if (result.kind === "overflow") {
      run.logger.error({ sessionId, laneKey: run.lane.laneKey }, "the prompt overflows the model's window even after compaction");
      return { kind: "failed", reason: "the conversation does not fit the model's context window, even after compaction", reply: OVERFLOW_REPLY };
    }
    if (result.kind !== "result") return result;
    return record(run, sessionId, result.value);
  };
}

/** The agent loop under "typing…", its tools' effects held until it returned. */
async function invoke(
  o: AgentCallerOptions,
  run: Run,
  sessionId: string,
  messages: Awaited<ReturnType<ContextBuilder["build"]>>,
  call: AgentCallOptions,
): Promise<{ kind: "result"; value: AgentLoopResult } | { kind: "overflow" } | Exclude<AgentAnswer, { kind: "text" }>> {
  const held = run.uow.hold();
  const chat = run.scope.chat;
  const stopTyping = chat ? showTyping(o.outbound, chat.address) : () => undefined;
  try {
    const value = await o.runAgent!(messages, {
      sessionId,
      chatAddress: chat?.address ?? null,
      runId: run.id,
      laneKey: run.lane.laneKey,
      eventDepth: call.eventDepth ?? 0,
      subagent: (sessionId === run.scope.session.id ? run.scope.session.parentId : null) !== null,
      allowedTools: call.allowedTools ?? null,
      signal: run.lane.signal,
      user: sessionId,
      outbox: createToolOutbox(o, run, sessionId, held, call.eventDepth ?? 0),
    });
    held.keep();
    run.usage.input += value.usage.input;
    run.usage.output += value.usage.output;
    return { kind: "result", value };
  } catch (error) {
    const signal = run.lane.signal;
    if (signal.reason instanceof RunStoppedError) {
      // `/stop`: keep what was said, send nothing, and tell the /stop that follows.
      await o.redis.set(stoppedKey(o.prefix, run.lane.laneKey), run.id, "PX", STOPPED_MARK_MS);
      return { kind: "silent" };
    }
    if (error instanceof ContextOverflowError && !signal.aborted) return { kind: "overflow" };
    if (signal.aborted || !run.lane.items.some((i) => i.attempts >= o.maxAttempts)) throw error;
    run.logger.error({ err: (error as Error).message, laneKey: run.lane.laneKey }, "LLM failed on the last attempt");
    return { kind: "failed" };
  } finally {
    stopTyping();
  }
}

/** Stores the loop's tool traffic and its final text; the text after the reply signals. */
function record(run: Run, sessionId: string, result: AgentLoopResult): AgentAnswer {
  run.appendTurns(
    sessionId,
    result.turns.map((turn) =>
      turn.role === "assistant"
        ? { role: "assistant", content: turn.content, metadata: { tool_calls: turn.toolCalls }, source: "agent" }
        : { role: "tool", content: turn.content, metadata: { tool_call_id: turn.toolCallId, name: turn.name }, source: "agent" },
    ),
  );
  // A tool ended the turn (`agent_yield`): the parent resumes when its children are done.
  if (result.ended) return { kind: "silent" };
  const finalText = result.finalText ?? `I stopped after ${result.iterations} steps without finishing. Please ask again or narrow the request.`;
  const decision = applyReplySignals(finalText);
  if (decision.action === "suppress") {
    run.logger.debug({ laneKey: run.lane.laneKey, reason: decision.reason }, "reply suppressed");
    return { kind: "silent" };
  }
  run.appendTurns(sessionId, [{ role: "assistant", content: decision.text, source: "agent" }]);
  return { kind: "text", text: decision.text };
}
