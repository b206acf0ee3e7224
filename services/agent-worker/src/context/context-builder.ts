import { MessageContext, type Attachment } from "@nahida/contracts";
import type { ChatMessage, ToolCall } from "../agent/llm.client";
import { createWorkspacePromptReader } from "./workspace-files";
import type { EnvelopeRenderer } from "./envelope";

export const DEFAULT_SYSTEM_PROMPT = [
  "You are Nahida, a helpful assistant in a chat app.",
  "Each user message starts with an envelope line: [local time | channel/chat type | sender and role tags]. It is metadata, not part of what the user wrote; do not repeat it.",
  "Answer in the user's language. Keep replies short enough for a chat.",
  "If a message in a group needs no answer from you, reply with exactly NO_REPLY.",
  "A message starting with [scheduled task ...] is a task you scheduled earlier, not a message from a user; if it needs no message to the chat, reply with exactly HEARTBEAT_OK.",
].join("\n");

export interface ContextBuilderOptions {
  envelope: EnvelopeRenderer;
  workspaceDir?: string;
  systemPrompt?: string;
  /** Turns of history included before the new messages. */
  historyTurns: number;
}

/** What a user turn stores in `turns.metadata`; the envelope is rebuilt from it. */
export interface UserTurnMetadata {
  message_context: MessageContext;
  message_id?: string;
  attachments?: Attachment[];
}

/** What a cron job's scheduled event stores in `turns.metadata` (role `event`, source `cron:<job>`). */
export interface ScheduledTurnMetadata {
  kind: "scheduled_turn";
  cron_job_id: string;
  cron_run_id: string;
  job_name: string;
  /** The slot it fired for, ISO 8601 UTC. */
  slot: string;
}

const isScheduledTurn = (metadata: Record<string, unknown>): boolean => metadata.kind === "scheduled_turn";
const isAgentEvent = (metadata: Record<string, unknown>): boolean => metadata.kind === "agent_event";
/** Events that speak to the model as a turn of their own (a window of history may start at one). */
const isPromptEvent = (metadata: Record<string, unknown>): boolean => isScheduledTurn(metadata) || isAgentEvent(metadata);

/**
 * The envelope of an event from another session or an operator: it goes in as a user-role
 * turn (the model is to act on it), labelled with where it came from, never as something
 * a person in the chat wrote.
 */
function renderAgentEvent(metadata: Record<string, unknown>, source: string, content: string): string {
  const from = typeof metadata.from_session_id === "string" ? ` | from session ${metadata.from_session_id}` : "";
  const label = source.replace(/[\r\n\]|]/g, " ").slice(0, 100);
  return `[event from ${label}${from} | ${metadata.mode === "record_only" ? "for your information" : "asks for a turn"} | not a message from a user]\n${content}`;
}

/** A message the agent of another session sent into this chat (`message` with delivery `record`). */
function renderCrossSessionMessage(metadata: Record<string, unknown>, source: string, content: string): string {
  const from = typeof metadata.from_session_id === "string" ? `session ${metadata.from_session_id}` : source;
  return `[sent into this chat by the agent of ${from}]\n${content}`;
}

/**
 * The envelope of a scheduled event: it asks the model to act like a user message does, so
 * it goes in as one, but names itself as a scheduled task so the model never takes it for
 * something a person in the chat wrote.
 */
function renderScheduledTurn(metadata: Record<string, unknown>, prompt: string): string {
  const name = String(metadata.job_name ?? "").replace(/[\r\n\]|]/g, " ").slice(0, 100);
  return `[scheduled task "${name}" | slot ${String(metadata.slot ?? "")} | not a message from a user]\n${prompt}`;
}

function attachmentMarkers(attachments: Attachment[] | undefined): string {
  if (!attachments?.length) return "";
  return attachments.map((a) => `\n[${a.type}${a.filename ? `: ${a.filename}` : ""}]`).join("");
}

/**
 * Chat APIs require an assistant message with tool calls to be followed directly by its
 * tool results. Anything stored in between (an event recorded concurrently) moves to just
 * after the results; results without a call before them are dropped.
 */
export function keepToolResultsAdjacent(messages: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  let pending: Set<string> | null = null;
  let deferred: ChatMessage[] = [];
  const flush = () => {
    out.push(...deferred);
    deferred = [];
    pending = null;
  };
  for (const message of messages) {
    if (message.role === "tool") {
      if (pending?.has(message.tool_call_id)) {
        out.push(message);
        pending.delete(message.tool_call_id);
        if (pending.size === 0) flush();
      }
      continue;
    }
    if (pending) {
      if (message.role === "assistant" || message.role === "user") flush();
      else {
        deferred.push(message);
        continue;
      }
    }
    out.push(message);
    if (message.role === "assistant" && message.tool_calls?.length) pending = new Set(message.tool_calls.map((c) => c.id));
  }
  flush();
  return out;
}

/** The stored fields a turn is rendered from. */
export interface RenderableTurn {
  role: string;
  content: string;
  metadata: unknown;
  /** Who produced it (`agent:<run>`, `api:<token>`, `cron:<job>`); events name it in their envelope. */
  source?: string;
}

/**
 * Builds the model's input: system prompt (+ workspace files), history rendered from what
 * was stored, then the new messages. Rendering uses only persisted fields, so a turn looks
 * the same in every later request (prompt-cache friendly).
 */
export function createContextBuilder(options: ContextBuilderOptions) {
  const readPromptFiles = createWorkspacePromptReader({ cacheMs: 5_000 });
  function renderTurn(turn: RenderableTurn): ChatMessage | null {
    const metadata = (turn.metadata ?? {}) as Record<string, unknown>;
    switch (turn.role) {
      case "user": {
        const context = MessageContext.safeParse(metadata.message_context);
        const text = `${turn.content}${attachmentMarkers(metadata.attachments as Attachment[] | undefined)}`;
        return { role: "user", content: context.success ? options.envelope.renderUserTurn(context.data, text) : text };
      }
      case "assistant": {
        const toolCalls = metadata.tool_calls as ToolCall[] | undefined;
        return toolCalls?.length
          ? { role: "assistant", content: turn.content || null, tool_calls: toolCalls }
          : { role: "assistant", content: turn.content };
      }
      case "tool":
        return { role: "tool", tool_call_id: String(metadata.tool_call_id ?? ""), content: turn.content };
      case "event":
        if (isScheduledTurn(metadata)) return { role: "user", content: renderScheduledTurn(metadata, turn.content) };
        if (isAgentEvent(metadata)) return { role: "user", content: renderAgentEvent(metadata, turn.source ?? "", turn.content) };
        if (metadata.kind === "cross_session_message") return { role: "system", content: renderCrossSessionMessage(metadata, turn.source ?? "", turn.content) };
        return { role: "system", content: turn.content };
      case "system":
        return { role: "system", content: turn.content };
      default:
        return null;
    }
  }

  return {
    renderTurn,
    async build(history: RenderableTurn[], fresh: RenderableTurn[]): Promise<ChatMessage[]> {
      const files = await readPromptFiles(options.workspaceDir);
      const system = [options.systemPrompt ?? DEFAULT_SYSTEM_PROMPT, ...files.map((f) => `## ${f.name}\n${f.content}`)].join("\n\n");
      // A window that starts inside a tool exchange would be rejected by the API.
      const firstUser = history.findIndex((t) => t.role === "user" || (t.role === "event" && isPromptEvent((t.metadata ?? {}) as Record<string, unknown>)));
      const window = firstUser === -1 ? [] : history.slice(firstUser);
      const rendered = [...window, ...fresh].map(renderTurn).filter((m): m is ChatMessage => m !== null);
      return [{ role: "system", content: system }, ...keepToolResultsAdjacent(rendered)];
    },
  };
}

export type ContextBuilder = ReturnType<typeof createContextBuilder>;
