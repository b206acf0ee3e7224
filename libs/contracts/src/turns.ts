import { z } from "zod";
import { err, ok, type Result } from "./result";
import { Attachment, MessageContext } from "./messages";
import { SessionEventMode } from "./cross-session";

/**
 * Who a stored turn speaks as. `event` turns are what happened in the session that nobody
 * in it said: a scheduled task, an event from another session, a message sent into it.
 */
export const TurnRole = z.enum(["user", "assistant", "tool", "system", "event"]);
export type TurnRole = z.infer<typeof TurnRole>;

/** A tool call as the model asked for it (the OpenAI chat-completions shape, kept verbatim). */
export const StoredToolCall = z.looseObject({
  id: z.string(),
  type: z.literal("function"),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

/**
 * What a user turn stores in `turns.metadata`; the envelope is rebuilt from it. A context or
 * attachments that do not parse are read as absent: the turn is still the user's words.
 */
export const UserTurnMetadata = z.looseObject({
  message_context: MessageContext.optional().catch(undefined),
  message_id: z.string().optional(),
  attachments: z.array(Attachment).optional().catch(undefined),
});
export type UserTurnMetadata = z.infer<typeof UserTurnMetadata>;

export const AssistantTurnMetadata = z.looseObject({ tool_calls: z.array(StoredToolCall).optional() });
export type AssistantTurnMetadata = z.infer<typeof AssistantTurnMetadata>;

/** A tool result; without its call's id it cannot be placed after the call. */
export const ToolTurnMetadata = z.looseObject({ tool_call_id: z.string(), name: z.string().optional() });
export type ToolTurnMetadata = z.infer<typeof ToolTurnMetadata>;

/** A cron job's agent turn (source `cron:<job>`). `slot`: the slot it fired for, ISO 8601 UTC. */
export const ScheduledTurnMetadata = z.looseObject({
  kind: z.literal("scheduled_turn"),
  cron_job_id: z.string(),
  cron_run_id: z.string(),
  job_name: z.string(),
  slot: z.string(),
});
export type ScheduledTurnMetadata = z.infer<typeof ScheduledTurnMetadata>;

/** An event another session or an operator put into this session (source `agent:<run>`, `api:<token>`). */
export const AgentEventTurnMetadata = z.looseObject({
  kind: z.literal("agent_event"),
  event_id: z.string(),
  mode: SessionEventMode,
  depth: z.number().int(),
  from_session_id: z.string().nullable(),
});
export type AgentEventTurnMetadata = z.infer<typeof AgentEventTurnMetadata>;

/** A message the agent of another session sent into this session's chat (`message` with `record`). */
export const CrossSessionMessageMetadata = z.looseObject({
  kind: z.literal("cross_session_message"),
  delivery_id: z.string(),
  target: z.string(),
  from_session_id: z.string(),
});
export type CrossSessionMessageMetadata = z.infer<typeof CrossSessionMessageMetadata>;

/** A message sent into this session's chat from outside a run (an operator's send with `record_event`). */
export const OutboundEventMetadata = z.looseObject({
  kind: z.literal("outbound"),
  delivery_id: z.string(),
  target: z.string(),
  attachments: z.array(z.unknown()).optional(),
});
export type OutboundEventMetadata = z.infer<typeof OutboundEventMetadata>;

/** A sub-agent's task, the first turn of its child session (source `agent:<parent run>`). */
export const SubagentTaskMetadata = z.looseObject({
  kind: z.literal("subagent_task"),
  task_id: z.string(),
  label: z.string().nullable(),
  parent_session_id: z.string(),
});
export type SubagentTaskMetadata = z.infer<typeof SubagentTaskMetadata>;

/** A finished sub-agent's result, reported to its parent (source `subagent:<task>`); `status` is the runtime's, never the model's. */
export const SubagentResultMetadata = z.looseObject({
  kind: z.literal("subagent_result"),
  task_id: z.string(),
  label: z.string().nullable(),
  status: z.string(),
  child_session_id: z.string(),
  /** `announce` or `resume`: how the parent came to hear of it. */
  consumed_by: z.string(),
});
export type SubagentResultMetadata = z.infer<typeof SubagentResultMetadata>;

export const EventTurnMetadata = z.discriminatedUnion("kind", [
  ScheduledTurnMetadata,
  AgentEventTurnMetadata,
  CrossSessionMessageMetadata,
  OutboundEventMetadata,
  SubagentTaskMetadata,
  SubagentResultMetadata,
]);
export type EventTurnMetadata = z.infer<typeof EventTurnMetadata>;

/** A stored turn's role and metadata, read once: each role has its metadata's shape. */
export type TypedTurn =
  | { role: "user"; metadata: UserTurnMetadata }
  | { role: "assistant"; metadata: AssistantTurnMetadata }
  | { role: "tool"; metadata: ToolTurnMetadata }
  | { role: "system"; metadata: Record<string, unknown> }
  | { role: "event"; metadata: EventTurnMetadata };

const firstIssue = (error: z.ZodError) => {
  const issue = error.issues[0];
  return issue ? `${issue.path.join(".") || "metadata"}: ${issue.message}` : "invalid";
};

/**
 * Reads a stored turn's role and metadata. An unknown role, or metadata that does not fit
 * its role, is an error with its reason: the caller decides what to do with it, never a
 * silent drop.
 */
export function readTurn(turn: { role: string; metadata: unknown }): Result<TypedTurn, string> {
  const role = TurnRole.safeParse(turn.role);
  if (!role.success) return err(`unknown turn role ${JSON.stringify(turn.role.slice(0, 32))}; known: ${TurnRole.options.join(", ")}`);
  const known = role.data;
  const metadata = turn.metadata ?? {};
  const parsed = <T>(schema: z.ZodType<T>, wrap: (m: T) => TypedTurn): Result<TypedTurn, string> => {
    const result = schema.safeParse(metadata);
    return result.success ? ok(wrap(result.data)) : err(`${known} turn: ${firstIssue(result.error)}`);
  };
  switch (known) {
    case "user":
      return parsed(UserTurnMetadata, (m) => ({ role: "user", metadata: m }));
    case "assistant":
      return parsed(AssistantTurnMetadata, (m) => ({ role: "assistant", metadata: m }));
    case "tool":
      return parsed(ToolTurnMetadata, (m) => ({ role: "tool", metadata: m }));
    case "system":
      return parsed(z.record(z.string(), z.unknown()), (m) => ({ role: "system", metadata: m }));
    case "event":
      return parsed(EventTurnMetadata, (m) => ({ role: "event", metadata: m }));
    default: {
      const unreachable: never = known;
      return err(`unhandled turn role ${String(unreachable)}`);
    }
  }
}
