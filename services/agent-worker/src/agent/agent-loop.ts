import type { ChatMessage, LlmClient, ToolCall } from "./llm.client";
import { ToolRegistry, type ToolContext } from "./tool-registry";

/** A turn the loop produced, to be persisted with the run's result. */
export type LoopTurn =
  | { role: "assistant"; content: string; toolCalls: ToolCall[] }
  | { role: "tool"; toolCallId: string; name: string; content: string };

export interface AgentLoopResult {
  /** The model's final text before reply signals; null when the iteration cap was hit. */
  finalText: string | null;
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
  return async function runAgent(messages: ChatMessage[], context: ToolContext & { user: string }): Promise<AgentLoopResult> {
    const conversation = [...messages];
    const turns: LoopTurn[] = [];
    const specs = options.tools.specs();
    for (let iteration = 1; iteration <= options.maxIterations; iteration++) {
      context.signal.throwIfAborted();
      const completion = await options.llm.complete({ messages: conversation, tools: specs, user: context.user, signal: context.signal });
      if (completion.toolCalls.length === 0) {
        return { finalText: completion.content ?? "", turns, iterations: iteration };
      }
      const content = completion.content ?? "";
      conversation.push({ role: "assistant", content: content || null, tool_calls: completion.toolCalls });
      turns.push({ role: "assistant", content, toolCalls: completion.toolCalls });
      for (const call of completion.toolCalls) {
        const outcome = await options.tools.execute(call.function.name, call.function.arguments, context);
        const rendered = ToolRegistry.render(outcome);
        conversation.push({ role: "tool", tool_call_id: call.id, content: rendered });
        turns.push({ role: "tool", toolCallId: call.id, name: call.function.name, content: rendered });
      }
    }
    return { finalText: null, turns, iterations: options.maxIterations };
  };
}

export type RunAgent = ReturnType<typeof createAgentLoop>;
