import { z } from "zod";
import { ChatAddressString, ChatType } from "./chat-address";

export const AttachmentType = z.enum(["photo", "document", "audio", "video"]);
export type AttachmentType = z.infer<typeof AttachmentType>;

/**
 * A file travelling with a message. Exactly one of `path` (inside the workspace),
 * `url`, or `fileId` (a platform file handle such as a Telegram file_id) is set.
 */
export const Attachment = z
  .object({
    type: AttachmentType,
    path: z.string().min(1).max(4096).optional(),
    url: z.url().max(4096).optional(),
    fileId: z.string().min(1).max(1024).optional(),
    filename: z.string().min(1).max(255).optional(),
    mimeType: z.string().min(1).max(255).optional(),
    caption: z.string().max(4096).optional(),
  })
  .refine((a) => [a.path, a.url, a.fileId].filter((v) => v !== undefined).length === 1, {
    message: "exactly one of path, url or fileId is required",
  });
export type Attachment = z.infer<typeof Attachment>;

/** A workspace file as an {@link Attachment}: optional fields left out, not set to undefined. */
export function workspaceAttachment(a: { type: AttachmentType; path: string; filename?: string | undefined; caption?: string | undefined }): Attachment {
  return { type: a.type, path: a.path, ...(a.filename ? { filename: a.filename } : {}), ...(a.caption ? { caption: a.caption } : {}) };
}

export const RoleTag = z.string().min(1).max(32);

export const Sender = z.object({
  id: z.string().min(1),
  /** Display name as the platform shows it. */
  displayName: z.string(),
  /** Short label used in the envelope (first name, nickname). */
  label: z.string(),
  /** Role tags such as `admin`, `owner`. */
  roles: z.array(RoleTag).default([]),
  isBot: z.boolean().default(false),
});
export type Sender = z.infer<typeof Sender>;

/** A command at the start of a message (`/name args`), as the ingress recognised it. */
export const InboundCommand = z.object({
  /** Lower-cased, without the prefix and without `@botname`. */
  name: z.string().min(1).max(64),
  /** The text after the command, trimmed. */
  args: z.string(),
  /** True for `/cmd@otherbot`: the command is meant for another bot in the chat. */
  addressedToOther: z.boolean().default(false),
});
export type InboundCommand = z.infer<typeof InboundCommand>;

/**
 * Splits `/name@bot args` (prefix configurable) for channels whose ingress does not parse
 * commands itself; the bot-name check is the ingress's job.
 */
export function parseCommand(text: string, prefix = "/"): { name: string; args: string } | null {
  if (!text.startsWith(prefix)) return null;
  const match = /^(\S+)\s*([\s\S]*)$/.exec(text.slice(prefix.length));
  if (!match) return null;
  const name = match[1]!.split("@")[0]!.toLowerCase();
  if (!/^[a-z0-9_]{1,32}$/.test(name)) return null;
  return { name, args: match[2]!.trim() };
}

/** A platform message normalized by an ingress. */
export const InboundMessage = z.object({
  /** The platform's message id (Telegram message_id, Milky message_seq). */
  messageId: z.string().min(1),
  channel: z.string().min(1),
  chat: ChatAddressString,
  chatDisplayName: z.string().optional(),
  sender: Sender,
  text: z.string(),
  attachments: z.array(Attachment).default([]),
  /** Platform id of the message this one replies to. */
  replyTo: z.string().optional(),
  /** True when the message addresses the bot (mention, reply to the bot, command). */
  mentionsBot: z.boolean().default(false),
  /** When the platform says the message was sent (ISO 8601, UTC). */
  timestamp: z.iso.datetime(),
  /** Set when the ingress recognised a command; the agent worker parses the text otherwise. */
  command: InboundCommand.optional(),
});
export type InboundMessage = z.infer<typeof InboundMessage>;

/** The facts rendered into a turn's envelope; persisted with the turn, never recomputed. */
export const MessageContext = z.object({
  timestamp: z.iso.datetime(),
  channel: z.string(),
  chatType: ChatType,
  chatDisplayName: z.string().optional(),
  senderLabel: z.string(),
  roles: z.array(RoleTag).default([]),
});
export type MessageContext = z.infer<typeof MessageContext>;

/** What a channel sends. `extra` carries channel-specific options. */
export const OutboundMessage = z.object({
  text: z.string().max(100_000).default(""),
  replyTo: z.string().min(1).max(128).optional(),
  attachments: z.array(Attachment).max(10).default([]),
  extra: z.record(z.string(), z.unknown()).default({}),
});
export type OutboundMessage = z.infer<typeof OutboundMessage>;
