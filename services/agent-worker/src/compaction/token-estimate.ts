import type { ChatMessage, ToolSpec } from "../agent/llm.client";

// Beyond ASCII (CJK, Cyrillic, Arabic, Thai, Devanagari, emoji): about a token a character or more.
const WIDE = /[^\u0000-\u007f]/gu;

/** Per message: the role and the separators the chat format adds. */
const MESSAGE_OVERHEAD = 4;

/**
 * A rough estimate of the tokens `text` costs: one per character beyond ASCII (CJK,
 * Cyrillic, Arabic, Thai, emoji), one per four ASCII characters (JSON, ids and base64 can
 * cost more; the threshold's margin and the API's overflow answer cover that). No tokenizer: the deployment may run any model behind an
 * OpenAI-compatible API, whose tokenizer Nahida does not know; the estimate only decides
 * when to compact, and the API's own count (usage) is what is reported.
 */
export function estimateTokens(text: string): number {
  const wide = text.match(WIDE) ?? [];
  const wideUnits = wide.reduce((n, c) => n + c.length, 0);
  return wide.length + Math.ceil((text.length - wideUnits) / 4);
}

/** The estimate of one chat message: its text, its tool calls' names and arguments, and the framing. */
export function estimateMessage(message: ChatMessage): number {
  const calls = message.role === "assistant" ? (message.tool_calls ?? []).reduce((n, c) => n + estimateTokens(c.function.name) + estimateTokens(c.function.arguments), 0) : 0;
  return MESSAGE_OVERHEAD + estimateTokens(message.content ?? "") + calls;
}

export const estimateMessages = (messages: readonly ChatMessage[]): number => messages.reduce((n, m) => n + estimateMessage(m), 0);

/** The tool specs offered with every request: their JSON, as the API receives it. */
export const estimateTools = (tools: readonly ToolSpec[]): number => (tools.length === 0 ? 0 : estimateTokens(JSON.stringify(tools)));
