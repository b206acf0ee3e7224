/**
 * Reply signals (SPEC §2): sentinels the agent writes in its final text to stay silent.
 *
 * Matching is deliberately strict. A sentinel counts only when it is the whole text (or, for
 * rule 3, the whole last line); `NO_REPLY.`, `**NO_REPLY**` or `I will NO_REPLY later` are
 * ordinary text and are sent. The system prompt asks for the bare token, and a loose match
 * would swallow real answers that merely mention it.
 */

export const NO_REPLY = "NO_REPLY";
export const HEARTBEAT_OK = "HEARTBEAT_OK";

/** Why a final text produced no message. */
export type SuppressReason = "no_reply" | "heartbeat" | "empty";

/**
 * What to do with the agent's final text. On `suppress` with reason `no_reply` the caller
 * must not persist the assistant turn; on `send` it persists and sends `text`.
 */
export type ReplyDecision = { action: "send"; text: string } | { action: "suppress"; reason: SuppressReason };

const NO_REPLY_LINE = /^no_reply$/i;
const HEARTBEAT_LINE = /^heartbeat_ok$/i;
/** A whole-text fenced block, optionally tagged json: ```json\n{...}\n``` */
const JSON_FENCE = /^```[ \t]*(?:json)?[ \t]*\r?\n?([\s\S]*?)\r?\n?[ \t]*```$/i;

/** Rule 1: the whole text, trimmed, is `NO_REPLY` in any letter case. */
export function isSilentReply(text: string): boolean {
  return NO_REPLY_LINE.test(text.trim());
}

/**
 * Rule 2: the whole text (trimmed, possibly inside one ```json fence) is a JSON object whose
 * `action` is the string `NO_REPLY` (trimmed, any letter case). Other fields are ignored.
 */
export function isJsonNoReply(text: string): boolean {
  const trimmed = text.trim();
  const fenced = JSON_FENCE.exec(trimmed);
  const candidate = (fenced?.[1] ?? trimmed).trim();
  if (!candidate.startsWith("{")) return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(candidate);
  } catch {
    return false;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return false;
  const action: unknown = (parsed as Record<string, unknown>)["action"];
  return typeof action === "string" && NO_REPLY_LINE.test(action.trim());
}

/**
 * Rule 3: removes `NO_REPLY` (trimmed, any letter case) standing alone on the last non-blank
 * line — repeatedly, should the model have written it twice — and trims the end of what
 * remains. Text without such a line comes back unchanged.
 */
export function stripTrailingNoReply(text: string): string {
  let rest = text.trimEnd();
  let stripped = false;
  for (;;) {
    const lineStart = rest.lastIndexOf("\n") + 1;
    if (!NO_REPLY_LINE.test(rest.slice(lineStart).trim())) break;
    rest = rest.slice(0, lineStart).trimEnd();
    stripped = true;
  }
  return stripped ? rest : text;
}

/** Rule 4: the whole text, trimmed, is `HEARTBEAT_OK` (any letter case, like NO_REPLY). */
export function isHeartbeatAck(text: string): boolean {
  return HEARTBEAT_LINE.test(text.trim());
}

/**
 * Applies the reply signals to the agent's final text, in SPEC order:
 * 1. exact `NO_REPLY` → suppress (`no_reply`); 2. JSON `{"action":"NO_REPLY"}` → suppress;
 * 3. a trailing `NO_REPLY` line is stripped and the rest is sent, or suppressed if nothing is
 * left; 4. exact `HEARTBEAT_OK` → suppress (`heartbeat`); 5. otherwise send the text as is.
 * Empty or whitespace-only text is suppressed with reason `empty`.
 * Rule 3 sends what remains literally: the remainder is not checked against rules 1, 2 and 4 again.
 */
export function applyReplySignals(finalText: string): ReplyDecision {
  if (finalText.trim() === "") return { action: "suppress", reason: "empty" };
  if (isSilentReply(finalText)) return { action: "suppress", reason: "no_reply" };
  if (isJsonNoReply(finalText)) return { action: "suppress", reason: "no_reply" };
  const stripped = stripTrailingNoReply(finalText);
  if (stripped !== finalText) {
    return stripped.trim() === "" ? { action: "suppress", reason: "no_reply" } : { action: "send", text: stripped };
  }
  if (isHeartbeatAck(finalText)) return { action: "suppress", reason: "heartbeat" };
  return { action: "send", text: finalText };
}
