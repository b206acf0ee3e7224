import { z } from "zod";
import { formatChatAddress, type ChatAddress, type InboundMessage, type MessageContext } from "@nahida/contracts";
import { cleanEvent, type NormalizedEvent } from "@nahida/ingress";
import { ClientMessageId } from "./web-chat.client-frame";
import { WEB_MESSAGE_MAX_CHARS } from "./web-chat.protocol";
import type { Visitor } from "./web-visitor";

/** The default instance's name: its chats are `web:private:<visitor>` and `web:group:<room>`. */
export const DEFAULT_WEB_CHANNEL = "web";

/**
 * One message from a page, as the gateway received it: the visitor it authenticated, the
 * page's frame, and when. This whole object is what the ledger keeps as the raw event.
 */
export interface WebChatEvent {
  visitor: Visitor;
  frame: { type: "message"; id: string; text: string };
  /** The gateway's clock: a browser's is not trusted. ISO 8601. */
  receivedAt: string;
}

// Lenient where a browser cannot be wrong (the gateway built it), strict where it must not be.
const WebChatEventWire = z.object({
  visitor: z.object({ id: z.string().regex(/^[A-Za-z0-9_.@-]{1,64}$/), name: z.string().min(1).max(64), room: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/).optional() }),
  frame: z.object({ type: z.literal("message"), id: ClientMessageId, text: z.string().max(WEB_MESSAGE_MAX_CHARS) }),
  receivedAt: z.iso.datetime(),
});

/** The chat a visitor talks in: their room, or a private chat of their own. */
export function visitorChat(channel: string, visitor: Visitor): ChatAddress {
  return visitor.room ? { channel, type: "group", id: visitor.room } : { channel, type: "private", id: visitor.id };
}

/**
 * A web chat event → what the intake stores. Pure and never throws. Every message
 * addresses the bot (a room is a conversation with it); the de-duplication key is the
 * visitor's and the page's message id, so a resend after a reconnect is the same message
 * and another visitor can never take its place.
 */
export function normalizeWebChatEvent(event: unknown, options: { channel: string }): NormalizedEvent {
  const clean = cleanEvent(event);
  if (!clean.ok) return { kind: "unreadable", reason: `the event ${clean.error}`, raw: event };
  const parsed = WebChatEventWire.safeParse(clean.value);
  if (!parsed.success) return { kind: "unreadable", reason: `not a web chat message: ${parsed.error.issues[0]?.message ?? "invalid"}`, raw: event };
  const { visitor, frame, receivedAt } = parsed.data;
  if (frame.text.trim() === "") return { kind: "ignored", reason: "an empty message" };
  const chat = visitorChat(options.channel, visitor);
  const timestamp = new Date(receivedAt).toISOString();
  const message: InboundMessage = {
    messageId: frame.id,
    channel: options.channel,
    chat: formatChatAddress(chat),
    sender: { id: visitor.id, displayName: visitor.name, label: visitor.name, roles: [], isBot: false },
    text: frame.text,
    attachments: [],
    mentionsBot: true,
    timestamp,
  };
  const context: MessageContext = { timestamp, channel: options.channel, chatType: chat.type, senderLabel: visitor.name, roles: [] };
  return { kind: "message", dedupeKey: `${visitor.id}:${frame.id}`, message, context, raw: event };
}
