/**
 * The frames between the web chat page and the gateway, one JSON object per WebSocket
 * message. This file is shared with the page's code, so it holds types and constants only;
 * the gateway checks the page's frames with `ClientFrameSchema` (web-chat.client-frame.ts).
 */

/** Longest message a visitor may send, in UTF-16 code units. */
export const WEB_MESSAGE_MAX_CHARS = 4_000;
/** Largest frame a page may send (a message's text as JSON-escaped UTF-8, with room). */
export const WEB_FRAME_MAX_BYTES = 64 * 1024;
/** The page's id for a message it sends; a resend with the same id is the same message. */
export const CLIENT_MESSAGE_ID = /^[A-Za-z0-9_-]{8,64}$/;
/** The close code that tells a page its visitor was refused: it stops reconnecting. */
export const CLOSE_UNAUTHORIZED = 4401;

export type ClientFrame =
  /** The first frame: who the visitor is (a token from the operator's site), unless a cookie said so. */
  | { type: "hello"; token?: string }
  | { type: "message"; id: string; text: string };

/** One message as the page shows it. */
export interface ChatItem {
  /** `<sender key>:<the page's id>` for a visitor's message; `<delivery id>:<part>` for the bot's. */
  id: string;
  from: "visitor" | "bot";
  /** Who wrote a visitor's message (several people share a room): an opaque key, not their id. */
  sender?: { key: string; name: string };
  /** Markdown for the bot's messages, plain text for visitors'. */
  text: string;
  /** A file sent with the bot's message: a link when it has a URL. */
  attachment?: { type: string; url?: string; name?: string; caption?: string };
  /** ISO 8601. */
  at: string;
}

export type WebChatErrorCode = "bad_frame" | "unauthorized" | "rate_limited" | "unavailable";

export type ServerFrame =
  /** `key` is what the visitor's own messages carry as their sender. */
  | { type: "ready"; visitor: { id: string; key: string; name: string }; chat: string }
  | { type: "history"; items: ChatItem[] }
  | { type: "message"; item: ChatItem }
  /** The message with this id is stored (or was, before a resend). */
  | { type: "ack"; id: string }
  | { type: "typing" }
  | { type: "error"; code: WebChatErrorCode; message: string; id?: string; retryAfterSeconds?: number };
