import { InboundMessage, OutboundMessage, type ChatTranscriptEntry } from "@nahida/contracts";
import { chunkText } from "@nahida/text";
import type { ChatItem } from "./web-chat.protocol";

/** Longest part of a bot message shown as one bubble. */
export const WEB_PART_MAX_CHARS = 4_000;

/**
 * A message to the chat as the parts the page shows: its text in chunks, then one per
 * attachment. Ids are `<delivery id>:<index>`, the same for the live frame and the history,
 * so a page never shows a part twice. A workspace file has no address a browser can open:
 * it shows as its name.
 */
export function outboundItems(message: OutboundMessage, deliveryId: string, at: Date): ChatItem[] {
  const texts = chunkText(message.text, WEB_PART_MAX_CHARS);
  const item = (index: number, fields: Pick<ChatItem, "text"> & Partial<ChatItem>): ChatItem => ({ id: `${deliveryId}:${index}`, from: "bot", at: at.toISOString(), ...fields });
  return [
    ...texts.map((text, index) => item(index, { text })),
    ...message.attachments.map((a, index) =>
      item(texts.length + index, {
        text: "",
        attachment: { type: a.type, ...(a.url ? { url: a.url } : {}), ...(a.filename || a.path ? { name: a.filename ?? a.path!.split("/").pop()! } : {}), ...(a.caption ? { caption: a.caption } : {}) },
      }),
    ),
  ];
}

/**
 * A visitor's message as the page shows it. Room members see the sender's opaque key, never
 * their id (an operator's customer id, an email); the item's id is the key and the page's
 * id together, so one member cannot hide another's message by reusing its id.
 */
export function inboundItem(message: InboundMessage, senderKey: (visitorId: string) => string): ChatItem {
  const key = senderKey(message.sender.id);
  return { id: `${key}:${message.messageId}`, from: "visitor", sender: { key, name: message.sender.displayName }, text: message.text, at: message.timestamp };
}

/**
 * A chat's transcript as page items, oldest first; a row that no longer parses is left out.
 * Of a delivery, the parts the visitor may have seen: all of a sent one, those up to the
 * one in flight of one being sent, those recorded of one waiting or failed.
 */
export function transcriptItems(entries: readonly ChatTranscriptEntry[], senderKey: (visitorId: string) => string): ChatItem[] {
  return entries.flatMap((entry) => {
    if (entry.direction === "in") {
      const message = InboundMessage.safeParse(entry.message);
      return message.success ? [inboundItem(message.data, senderKey)] : [];
    }
    const message = OutboundMessage.safeParse(entry.message);
    if (!message.success) return [];
    const items = outboundItems(message.data, entry.id, entry.at);
    return entry.status === "sent" ? items : items.slice(0, entry.status === "sending" ? entry.sentParts + 1 : entry.sentParts);
  });
}
