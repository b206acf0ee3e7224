import { z } from "zod";
import { ChatType, parseChatAddress, type ChatAddress } from "./chat-address";
import { err, ok, type Result } from "./result";
import { noNul } from "./api";

/**
 * How an event reaches another session: `record_only` writes it into the history (the next
 * turn there sees it), `enqueue` also puts it into the session's lane, which runs a turn.
 */
export const SessionEventMode = z.enum(["record_only", "enqueue"]);
export type SessionEventMode = z.infer<typeof SessionEventMode>;

/**
 * Where an event stands, explicit so that no caller mistakes a slow answer for a lost one:
 * `recorded` (record_only, in the history), `queued` (waiting in the lane), `running`,
 * `done` (answered; the reply when there is one), `failed` (the run gave up; the error).
 */
export const SessionEventStatus = z.enum(["recorded", "queued", "running", "done", "failed"]);
export type SessionEventStatus = z.infer<typeof SessionEventStatus>;

/**
 * Which sessions an agent may see and send to: its own only, its own and its children
 * (`tree`, the default), or every session.
 */
export const SessionVisibility = z.enum(["self", "tree", "all"]);
export type SessionVisibility = z.infer<typeof SessionVisibility>;

export const SEND_POLICY_MAX_RULES = 200;

/**
 * One rule of the send policy: every field given must match the target (a chat of this
 * channel, of this chat type, a session whose id starts with this prefix).
 */
export const SendPolicyRule = z
  .strictObject({
    effect: z.enum(["allow", "deny"]),
    channel: z
      .string()
      .regex(/^[a-z][a-z0-9_-]{0,63}$/, "a channel name as in chat addresses (lower case, e.g. telegram)")
      .optional(),
    chat_type: ChatType.optional(),
    session_prefix: z
      .string()
      .regex(/^[0-9a-f-]{1,36}$/, "a session id prefix: lower-case hex digits and dashes")
      .optional(),
  })
  .meta({ id: "SendPolicyRule" });
export type SendPolicyRule = z.infer<typeof SendPolicyRule>;

/** What agents may send to other chats and sessions: the first matching rule decides, else `default`. */
export const SendPolicy = z
  .strictObject({
    default: z.enum(["allow", "deny"]).default("allow"),
    rules: z.array(SendPolicyRule).max(SEND_POLICY_MAX_RULES).default([]),
  })
  .meta({ id: "SendPolicy" });
export type SendPolicy = z.infer<typeof SendPolicy>;

export const DEFAULT_SEND_POLICY: SendPolicy = { default: "allow", rules: [] };

/** A chat's own say over sends into it, set by `/send on|off|inherit`; null inherits the policy. */
export const ChatSendOverride = z.enum(["allow", "deny"]);
export type ChatSendOverride = z.infer<typeof ChatSendOverride>;

/** What a send goes to, as the policy sees it. */
export interface SendTarget {
  /** The target's chat; null for a session without one (a sub-agent's), which channel and chat type rules never match. */
  channel: string | null;
  chatType: ChatType | null;
  /** The target session, when the send names one (sessions_send, `session:<id>`). */
  sessionId?: string;
  /** The target chat's `/send` override. */
  chatOverride: ChatSendOverride | null;
}

/**
 * Whether a send to `target` is allowed. The chat's override wins (its owner said so), then
 * the first rule whose fields all match, then the policy's default. A refusal says which.
 */
export function checkSendPolicy(policy: SendPolicy, target: SendTarget): Result<void, string> {
  if (target.chatOverride === "deny") return err("the target chat turned sends from other sessions off (/send off)");
  if (target.chatOverride === "allow") return ok(undefined);
  const index = policy.rules.findIndex(
    (rule) =>
      (rule.channel === undefined || rule.channel === target.channel) &&
      (rule.chat_type === undefined || rule.chat_type === target.chatType) &&
      (rule.session_prefix === undefined || (target.sessionId ?? "").startsWith(rule.session_prefix)),
  );
  const effect = index >= 0 ? policy.rules[index]!.effect : policy.default;
  if (effect === "allow") return ok(undefined);
  return err(index >= 0 ? `the send policy denies it (rule ${index + 1})` : "the send policy denies sends by default");
}

const SESSION_TARGET = /^session:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

export const MESSAGE_TARGET_FORMS = "a typed chat address (<channel>:<private|group|channel>:<id>, e.g. telegram:group:-100123) or session:<session id>";

/** A `message` tool target: a chat by its typed address, or a session by its exact id. */
export type MessageTarget = { kind: "chat"; address: ChatAddress; raw: string } | { kind: "session"; sessionId: string };

/**
 * Reads a message target. Bare numbers and untyped keys (`telegram:123`, `-100123`) are
 * refused with the accepted forms: a guessed target is a message in the wrong chat.
 */
export function parseMessageTarget(input: string): Result<MessageTarget, string> {
  const value = input.trim();
  const session = SESSION_TARGET.exec(value);
  if (session) return ok({ kind: "session", sessionId: session[1]!.toLowerCase() });
  if (value.startsWith("session:")) return err(`${JSON.stringify(value.slice(0, 80))} is not a session target; use session:<session id> (a UUID, as sessions_list shows)`);
  const address = parseChatAddress(value);
  if (!address.ok) return err(`${JSON.stringify(value.slice(0, 80))} is not a target (${address.error.message}); use ${MESSAGE_TARGET_FORMS}`);
  return ok({ kind: "chat", address: address.value, raw: value });
}

export const SessionEventRequest = z
  .strictObject({
    message: noNul(z.string().trim().min(1).max(20_000)),
    mode: SessionEventMode.default("enqueue"),
  })
  .meta({ id: "SessionEventRequest" });
export type SessionEventRequest = z.infer<typeof SessionEventRequest>;

export const SessionEventView = z
  .object({
    event_id: z.uuid(),
    session_id: z.uuid(),
    mode: SessionEventMode,
    status: SessionEventStatus,
    source: z.string(),
    /** The lane run that handles it, once one has started. */
    run_id: z.uuid().nullable(),
    reply: z.string().nullable(),
    error: z.string().nullable(),
    created_at: z.iso.datetime(),
    finished_at: z.iso.datetime().nullable(),
  })
  .meta({ id: "SessionEvent" });
export type SessionEventView = z.infer<typeof SessionEventView>;

export const SessionEventParams = z.strictObject({ id: z.uuid(), event_id: z.uuid() });

export const SessionEventList = z.object({ events: z.array(SessionEventView) }).meta({ id: "SessionEventList" });
export type SessionEventList = z.infer<typeof SessionEventList>;

/**
 * `POST /api/sessions/:id/events` answers at once: `recorded` (in the history) or `queued`
 * (in the lane). The run id is known only once a run takes the event, so it is absent
 * here until then; follow the event with `GET .../events/:event_id`.
 */
export const SessionEventAccepted = z
  .object({ event_id: z.uuid(), status: z.enum(["recorded", "queued"]), run_id: z.uuid().optional() })
  .meta({ id: "SessionEventAccepted" });
export type SessionEventAccepted = z.infer<typeof SessionEventAccepted>;
