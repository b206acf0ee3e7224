import {
  readTurn,
  type AgentEventTurnMetadata,
  type SubagentResultMetadata,
  type SubagentTaskMetadata,
  type Attachment,
  type CrossSessionMessageMetadata,
  type EventTurnMetadata,
  type ScheduledTurnMetadata,
  type TypedTurn,
} from "@nahida/contracts";
import type { ChatMessage } from "../agent/llm.client";
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
  /** Told about every stored turn that cannot be read (unknown role, metadata of the wrong shape), with its reason. */
  onUnreadableTurn?: (turn: { id?: string; role: string }, reason: string) => void;
}

/**
 * The envelope of an event from another session or an operator: it goes in as a user-role
 * turn (the model is to act on it), labelled with where it came from, never as something
 * a person in the chat wrote.
 */
function renderAgentEvent(metadata: AgentEventTurnMetadata, source: string, content: string): string {
  const from = metadata.from_session_id !== null ? ` | from session ${metadata.from_session_id}` : "";
  const label = source.replace(/[\r\n\]|]/g, " ").slice(0, 100);
  return `[event from ${label}${from} | ${metadata.mode === "record_only" ? "for your information" : "asks for a turn"} | not a message from a user]\n${content}`;
}

/** A message the agent of another session sent into this chat (`message` with delivery `record`). */
function renderCrossSessionMessage(metadata: CrossSessionMessageMetadata, content: string): string {
  return `[sent into this chat by the agent of session ${metadata.from_session_id}]\n${content}`;
}

/**
 * The envelope of a scheduled event: it asks the model to act like a user message does, so
 * it goes in as one, but names itself as a scheduled task so the model never takes it for
 * something a person in the chat wrote.
 */
function renderScheduledTurn(metadata: ScheduledTurnMetadata, prompt: string): string {
  const name = metadata.job_name.replace(/[\r\n\]|]/g, " ").slice(0, 100);
  return `[scheduled task "${name}" | slot ${metadata.slot} | not a message from a user]\n${prompt}`;
}

const cleanLabel = (label: string | null) => (label === null ? "" : ` "${label.replace(/[\r\n\]|"]/g, " ").slice(0, 100)}"`);

/** A sub-agent's task: the first turn of its session, from its parent's agent, never from a user. */
function renderSubagentTask(metadata: SubagentTaskMetadata, content: string): string {
  return `[sub-agent task${cleanLabel(metadata.label)} from session ${metadata.parent_session_id} | not a message from a user | your final answer is the task's result, reported to that session]\n${content}`;
}

/** A child's result as its parent hears it; the status is the runtime's. */
function renderSubagentResult(metadata: SubagentResultMetadata, content: string): string {
  return `[sub-agent${cleanLabel(metadata.label)} (task ${metadata.task_id}) ${metadata.status} | not a message from a user]\n${content}`;
}

/** Events that speak to the model as a turn of their own (a window of history may start at one). */
const PROMPT_EVENTS = new Set<EventTurnMetadata["kind"]>(["scheduled_turn", "agent_event", "subagent_task", "subagent_result"]);
const isPromptEvent = (turn: TypedTurn): boolean => turn.role === "event" && PROMPT_EVENTS.has(turn.metadata.kind);
/** A context may start at a user message or an event that speaks to the model, never inside a tool exchange. */
const startsWindow = (turn: TypedTurn): boolean => turn.role === "user" || isPromptEvent(turn);

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
  id?: string;
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
  function renderTurn(stored: RenderableTurn, turn: TypedTurn): ChatMessage {
    switch (turn.role) {
      case "user": {
        const text = `${stored.content}${attachmentMarkers(turn.metadata.attachments)}`;
        const context = turn.metadata.message_context;
        return { role: "user", content: context ? options.envelope.renderUserTurn(context, text) : text };
      }
      case "assistant": {
        const toolCalls = turn.metadata.tool_calls;
        return toolCalls?.length
          ? { role: "assistant", content: stored.content || null, tool_calls: toolCalls }
          : { role: "assistant", content: stored.content };
      }
      case "tool":
        return { role: "tool", tool_call_id: turn.metadata.tool_call_id, content: stored.content };
      case "system":
        return { role: "system", content: stored.content };
      case "event":
        return renderEvent(turn.metadata, stored);
      default: {
        const unreachable: never = turn;
        throw new Error(`unhandled turn ${JSON.stringify(unreachable)}`);
      }
    }
  }

  function renderEvent(metadata: EventTurnMetadata, stored: RenderableTurn): ChatMessage {
    switch (metadata.kind) {
      case "scheduled_turn":
        return { role: "user", content: renderScheduledTurn(metadata, stored.content) };
      case "agent_event":
        return { role: "user", content: renderAgentEvent(metadata, stored.source ?? "", stored.content) };
      case "cross_session_message":
        return { role: "system", content: renderCrossSessionMessage(metadata, stored.content) };
      case "outbound":
        return { role: "system", content: stored.content };
      case "subagent_task":
        return { role: "user", content: renderSubagentTask(metadata, stored.content) };
      case "subagent_result":
        return { role: "user", content: renderSubagentResult(metadata, stored.content) };
      default: {
        const unreachable: never = metadata;
        throw new Error(`unhandled event ${JSON.stringify(unreachable)}`);
      }
    }
  }

  /** Stored turns read once; one that cannot be read is left out and reported with its reason. */
  function read(turns: RenderableTurn[]): { stored: RenderableTurn; turn: TypedTurn }[] {
    return turns.flatMap((stored) => {
      const turn = readTurn(stored);
      if (turn.ok) return [{ stored, turn: turn.value }];
      options.onUnreadableTurn?.({ ...(stored.id ? { id: stored.id } : {}), role: stored.role }, turn.error);
      return [];
    });
  }

  return {
    /**
     * The model's input: the system prompt, the compaction checkpoint's summary when the
     * session has one, the stored turns after it, then the run's new turns.
     */
    async build(history: RenderableTurn[], fresh: RenderableTurn[], checkpoint: { summary: string } | null = null): Promise<ChatMessage[]> {
      const files = await readPromptFiles(options.workspaceDir);
      const system = [options.systemPrompt ?? DEFAULT_SYSTEM_PROMPT, ...files.map((f) => `## ${f.name}\n${f.content}`)].join("\n\n");
      const past = read(history);
      // A window that starts inside a tool exchange would be rejected by the API.
      const firstUser = past.findIndex(({ turn }) => startsWindow(turn));
      const window = firstUser === -1 ? [] : past.slice(firstUser);
      const rendered = [...window, ...read(fresh)].map(({ stored, turn }) => renderTurn(stored, turn));
      const summary: ChatMessage[] = checkpoint ? [{ role: "system", content: checkpoint.summary }] : [];
      return [{ role: "system", content: system }, ...summary, ...keepToolResultsAdjacent(rendered)];
    },
    /** Each stored turn as the model sees it, and whether a context may start at it; unreadable ones left out. */
    render(turns: RenderableTurn[]): { stored: RenderableTurn; message: ChatMessage; startsWindow: boolean }[] {
      return read(turns).map(({ stored, turn }) => ({ stored, message: renderTurn(stored, turn), startsWindow: startsWindow(turn) }));
    },
  };
}

export type ContextBuilder = ReturnType<typeof createContextBuilder>;
