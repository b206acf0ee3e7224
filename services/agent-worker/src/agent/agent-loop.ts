import { SpanStatusCode, withSpan } from "@nahida/observability";
import type { ChatMessage, LlmClient, ToolCall } from "./llm.client";
import type { ToolContext } from "@nahida/plugin-sdk";
import { ToolRegistry } from "./tool-registry";

/** A turn the loop produced, to be persisted with the run's result. */
export type LoopTurn =
  | { role: "assistant"; content: string; toolCalls: ToolCall[] }
  | { role: "tool"; toolCallId: string; name: string; content: string };

export interface AgentLoopResult {
  /** The model's final text before reply signals; null when the iteration cap was hit or a tool ended the turn. */
  finalText: string | null;
  /** A tool ended the turn (`agent_yield`): there is no answer, and none is owed. */
  ended: boolean;
  /** Tokens the model calls used, as the API reported them. */
  usage: { input: number; output: number };
  /** Tool-call traffic in order (assistant requests and tool results). */
  turns: LoopTurn[];
  iterations: number;
}

export interface AgentLoopOptions {
  llm: LlmClient;
  tools: ToolRegistry;
  /** Model calls per run before giving up. */
  maxIterations: number;
}

/**
 * The agent loop: call the model, run the tools it asks for, feed the results back, until
 * it answers without tool calls or the iteration cap is reached.
 */
export function createAgentLoop(options: AgentLoopOptions) {
  return async function runAgent(messages: ChatMessage[], caller: Omit<ToolContext, "endTurn"> & { user: string }): Promise<AgentLoopResult> {
    const conversation = [...messages];
    const turns: LoopTurn[] = [];
    const usage = { input: 0, output: 0 };
    let ended = false;
    const context: ToolContext = { ...caller, endTurn: () => void (ended = true) };
    const specs = options.tools.specs(context);
    for (let iteration = 1; iteration <= options.maxIterations; iteration++) {
      context.signal.throwIfAborted();
      const completion = await options.llm.complete({ messages: conversation, tools: specs, user: caller.user, signal: context.signal });
      usage.input += completion.usage?.input ?? 0;
      usage.output += completion.usage?.output ?? 0;
      if (completion.toolCalls.length === 0) {
        return { finalText: completion.content ?? "", ended: false, usage, turns, iterations: iteration };
      }
      const content = completion.content ?? "";
      conversation.push({ role: "assistant", content: content || null, tool_calls: completion.toolCalls });
      turns.push({ role: "assistant", content, toolCalls: completion.toolCalls });
      for (const call of completion.toolCalls) {
        const outcome = await executeTool(options.tools, call, context);
        const rendered = ToolRegistry.render(outcome);
        conversation.push({ role: "tool", tool_call_id: call.id, content: rendered });
        turns.push({ role: "tool", toolCallId: call.id, name: call.function.name, content: rendered });
      }
      // After the whole batch: the model asked for these calls together, each gets its result.
      if (ended) return { finalText: null, ended: true, usage, turns, iterations: iteration };
    }
    return { finalText: null, ended: false, usage, turns, iterations: options.maxIterations };
  };
}

export type RunAgent = ReturnType<typeof createAgentLoop>;

/**
 * One tool call as a span (`execute_tool <name>`, GenAI conventions); a result the model is
 * told is an error marks the span failed. Arguments and results stay out of it.
 */
function executeTool(tools: ToolRegistry, call: ToolCall, context: ToolContext) {
  const attributes = { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.function.name, "gen_ai.tool.call.id": call.id };
  return withSpan(`execute_tool ${call.function.name}`, { attributes }, async (span) => {
    const outcome = await tools.execute(call.function.name, call.function.arguments, context);
    // Not the error text: it may quote the model's arguments.
    if (!outcome.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: "the tool answered with an error" });
    return outcome;
  });
}
