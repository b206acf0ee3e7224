import { checkSendPolicy, parseChatAddress, type ChatSendOverride } from "@nahida/contracts";
import type { LedgerReader } from "./plugin";

/**
 * Why a send from a run in `from` into the chat `address` (null: a session without a chat)
 * and the session `sessionId` is not allowed by the send policy; null when it is. A chat
 * named by address is judged with its current session too, so a session-prefix rule cannot
 * be passed by naming the chat. A chat's own replies are not a cross-chat send.
 */
export async function sendPolicyRefusal(
  ledger: Pick<LedgerReader, "sessions" | "policies">,
  from: { chatAddress: string | null; sessionId: string },
  address: string | null,
  sessionId?: string,
): Promise<string | null> {
  if (address !== null && address === from.chatAddress && (sessionId === undefined || sessionId === from.sessionId)) return null;
  const parsed = address === null ? null : parseChatAddress(address);
  if (parsed && !parsed.ok) return parsed.error.message;
  const [chat, policy] = await Promise.all([address === null ? null : ledger.sessions.getChat(address), ledger.policies.sendPolicy()]);
  const target = sessionId ?? chat?.currentSessionId ?? undefined;
  const allowed = checkSendPolicy(policy, {
    channel: parsed?.value.channel ?? null,
    chatType: parsed?.value.type ?? null,
    ...(target ? { sessionId: target } : {}),
    chatOverride: (chat?.sendPolicy ?? null) as ChatSendOverride | null,
  });
  return allowed.ok ? null : `sending to ${address ?? `session ${sessionId}`} is not allowed: ${allowed.error}`;
}
