import { z } from "zod";
import type { Update } from "grammy/types";
import {
  InboundMessage,
  MessageContext,
  RoleTag,
  formatChatAddress,
  parseChatAddress,
  type Attachment,
  type ChatType,
  type Sender,
} from "@nahida/contracts";

/** The bot an update was delivered to, as `getMe` reports it. */
export interface TelegramBotIdentity {
  id: number;
  /** Without the leading `@`; compared case-insensitively. */
  username: string;
}

export interface NormalizeUpdateOptions {
  /**
   * The channel instance name: `message.channel`, `context.channel` and the chat address's
   * channel. A deployment running two bots gives each its own. Default `telegram`.
   */
  channel?: string;
  /**
   * Role tags (`admin`, `owner`, …) of a sender in a chat, e.g. from a cache of
   * `getChatAdministrators`. Ids are the Telegram ids as decimal strings; for messages sent on
   * behalf of a chat (anonymous admins, channel posts) `senderId` is that chat's id.
   * Tags that are not valid RoleTags are dropped; a throwing lookup yields no roles.
   * Default: no roles.
   */
  rolesFor?: (chatId: string, senderId: string) => readonly string[];
}

/** A `bot_command` entity at the start of the text. */
export interface TelegramCommand {
  /** Lower-cased, without the leading `/` and without `@botname`. */
  name: string;
  /** The text after the command, trimmed. */
  args: string;
  /** True for `/cmd@otherbot`: the command is meant for another bot in the chat. */
  addressedToOther: boolean;
}

export interface NormalizedMessage {
  kind: "message";
  dedupeKey: string;
  message: InboundMessage;
  context: MessageContext;
  isCommand: boolean;
  /** Set exactly when `isCommand` is true. */
  command?: TelegramCommand;
}

export interface IgnoredUpdate {
  kind: "ignored";
  dedupeKey: string;
  /** Human-readable, for logs and metrics; not meant to be matched on. */
  reason: string;
  /**
   * Set when the update claims to be one Nahida takes but cannot be read as it (malformed,
   * or its message breaks the contract): the intake quarantines it rather than drop it.
   */
  malformed?: true;
}

export type NormalizeResult = NormalizedMessage | IgnoredUpdate;

/** Used when an update has no usable `update_id`; such updates are always ignored. */
export const INVALID_UPDATE_DEDUPE_KEY = "update:invalid";

/** The instance name of a deployment's only Telegram bot. */
export const DEFAULT_TELEGRAM_CHANNEL = "telegram";

// Dates past year 9999 would not render as an ISO 8601 timestamp.
const MAX_UNIX_SECONDS = 253_402_300_799;

// Wire types: only the fields the normalizer reads, under Telegram's own names. Optional parts
// that arrive malformed are dropped (`.catch(undefined)`) rather than losing the whole message;
// only the fields a message cannot exist without (id, date, chat) reject it.
function lenient<T extends z.ZodType>(schema: T) {
  return schema.optional().catch(undefined);
}

function lenientArray<T extends z.ZodType>(item: T) {
  return lenient(
    z.array(z.unknown()).transform((items) =>
      items.flatMap((value) => {
        const parsed = item.safeParse(value);
        return parsed.success ? [parsed.data as z.output<T>] : [];
      }),
    ),
  );
}

const TelegramUser = z.looseObject({
  id: z.number().int(),
  is_bot: z.boolean().catch(false),
  first_name: z.string().catch(""),
  last_name: lenient(z.string()),
  username: lenient(z.string()),
});
type TelegramUser = z.infer<typeof TelegramUser>;

const TelegramChat = z.looseObject({
  id: z.number().int(),
  type: z.enum(["private", "group", "supergroup", "channel"]),
  title: lenient(z.string()),
  first_name: lenient(z.string()),
  last_name: lenient(z.string()),
  username: lenient(z.string()),
});
type TelegramChat = z.infer<typeof TelegramChat>;

const TelegramMessageEntity = z.looseObject({
  type: z.string(),
  offset: z.number().int().nonnegative(),
  length: z.number().int().nonnegative(),
  user: lenient(z.looseObject({ id: z.number().int() })),
});
type TelegramMessageEntity = z.infer<typeof TelegramMessageEntity>;

const TelegramPhotoSize = z.looseObject({
  file_id: z.string().min(1),
  width: z.number().nonnegative(),
  height: z.number().nonnegative(),
  file_size: lenient(z.number()),
});
type TelegramPhotoSize = z.infer<typeof TelegramPhotoSize>;

/** Document, Audio, Voice, Video, Animation and VideoNote share these fields. */
const TelegramFile = z.looseObject({
  file_id: z.string().min(1),
  file_name: lenient(z.string()),
  mime_type: lenient(z.string()),
});
type TelegramFile = z.infer<typeof TelegramFile>;

const TelegramReplyMessage = z.looseObject({
  message_id: z.number().int(),
  from: lenient(TelegramUser),
  forum_topic_created: z.unknown().optional(),
});

const TelegramMessage = z.looseObject({
  message_id: z.number().int().nonnegative(),
  date: z.number().int().positive().max(MAX_UNIX_SECONDS),
  chat: TelegramChat,
  from: lenient(TelegramUser),
  sender_chat: lenient(TelegramChat),
  message_thread_id: lenient(z.number().int()),
  is_topic_message: lenient(z.boolean()),
  reply_to_message: lenient(TelegramReplyMessage),
  text: lenient(z.string()),
  entities: lenientArray(TelegramMessageEntity),
  caption: lenient(z.string()),
  caption_entities: lenientArray(TelegramMessageEntity),
  photo: lenientArray(TelegramPhotoSize),
  document: lenient(TelegramFile),
  audio: lenient(TelegramFile),
  voice: lenient(TelegramFile),
  video: lenient(TelegramFile),
  animation: lenient(TelegramFile),
  video_note: lenient(TelegramFile),
});
type TelegramMessage = z.infer<typeof TelegramMessage>;

/** Update fields that carry a new message the bot should see. */
const MESSAGE_UPDATE_KINDS = ["message", "channel_post"] as const;
type MessageUpdateKind = (typeof MESSAGE_UPDATE_KINDS)[number];

/**
 * Turns one Telegram update into a Nahida InboundMessage plus its MessageContext, or says why
 * it is ignored. Pure and total: it never throws, whatever the input.
 *
 * - Only `message` and `channel_post` become messages; edits, callback queries, membership
 *   changes, service messages and messages without text or supported media are ignored.
 * - `dedupeKey` is `update:<update_id>`. Telegram redelivers updates, and webhook retries or a
 *   poller failover can reorder them, so callers dedupe by key, not by "greater than last seen".
 * - The chat address is `<channel>:<private|group|channel>:<chat.id>[:<message_thread_id>]`,
 *   with the thread only for forum topic messages (`is_topic_message`).
 * - The raw update is not copied into the result; the caller stores it separately.
 */
export function normalizeUpdate(
  update: Update,
  bot: TelegramBotIdentity,
  options: NormalizeUpdateOptions = {},
): NormalizeResult {
  // Typed as Update for callers, but webhook bodies are untrusted: treat it as unknown.
  const raw: unknown = update;
  if (!isRecord(raw)) return ignored(INVALID_UPDATE_DEDUPE_KEY, "update is not an object");
  const updateId = raw["update_id"];
  if (typeof updateId !== "number" || !Number.isSafeInteger(updateId)) {
    return ignored(INVALID_UPDATE_DEDUPE_KEY, "update_id is missing or not an integer");
  }
  const dedupeKey = `update:${updateId}`;
  try {
    const kind = MESSAGE_UPDATE_KINDS.find((k) => raw[k] !== undefined);
    if (kind === undefined) {
      const payloadKey = Object.keys(raw).find((k) => k !== "update_id");
      return ignored(
        dedupeKey,
        payloadKey === undefined ? "update carries no payload" : `${payloadKey.slice(0, 64)} updates are not handled`,
      );
    }
    return normalizeMessage(raw[kind], kind, dedupeKey, bot, options);
  } catch (error) {
    // Last line of defence: a platform event must never crash the ingress.
    return malformed(dedupeKey, `normalizer failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function normalizeMessage(
  input: unknown,
  kind: MessageUpdateKind,
  dedupeKey: string,
  bot: TelegramBotIdentity,
  options: NormalizeUpdateOptions,
): NormalizeResult {
  const parsed = TelegramMessage.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
    return malformed(dedupeKey, `malformed ${kind}: ${where}${issue?.message ?? "invalid"}`);
  }
  const m = parsed.data;

  // A caption is the text of a media message; its entities live in caption_entities.
  const text = m.text ?? m.caption ?? "";
  const entities = (m.text !== undefined ? m.entities : m.caption_entities) ?? [];
  const attachments = attachmentsOf(m);
  if (text === "" && attachments.length === 0) {
    return ignored(dedupeKey, `${kind} has no text or supported media`);
  }

  const chatType = chatTypeOf(m.chat);
  const chatId = String(m.chat.id);
  const thread = m.is_topic_message === true && m.message_thread_id !== undefined ? String(m.message_thread_id) : undefined;
  const channel = options.channel ?? DEFAULT_TELEGRAM_CHANNEL;
  const chat = formatChatAddress({ channel, type: chatType, id: chatId, ...(thread !== undefined && { thread }) });
  const address = parseChatAddress(chat);
  if (!address.ok) return ignored(dedupeKey, address.error.message);

  const senderBase = senderOf(m, kind);
  if (senderBase === undefined) return ignored(dedupeKey, `${kind} has no sender`);
  const roles = rolesOf(options, chatId, senderBase.id);
  const sender: Sender = { ...senderBase, roles };

  const reply = effectiveReply(m);
  const command = parseCommand(text, entities, bot);
  const addressedToUs = command !== undefined && !command.addressedToOther;
  const mentionsBot =
    command?.addressedToOther !== true &&
    (chatType === "private" || mentionsBotIn(text, entities, bot) || reply?.from?.id === bot.id || addressedToUs);

  const timestamp = new Date(m.date * 1000).toISOString();
  const chatDisplayName = chatDisplayNameOf(m.chat);

  const message = InboundMessage.safeParse({
    messageId: String(m.message_id),
    channel,
    chat,
    ...(chatDisplayName !== undefined && { chatDisplayName }),
    sender,
    text,
    attachments,
    ...(reply !== undefined && { replyTo: String(reply.message_id) }),
    mentionsBot,
    timestamp,
  });
  if (!message.success) return malformed(dedupeKey, `normalized message is invalid: ${z.prettifyError(message.error)}`);
  const context = MessageContext.safeParse({
    timestamp,
    channel,
    chatType,
    ...(chatDisplayName !== undefined && { chatDisplayName }),
    senderLabel: sender.label,
    roles,
  });
  if (!context.success) return malformed(dedupeKey, `normalized context is invalid: ${z.prettifyError(context.error)}`);

  return {
    kind: "message",
    dedupeKey,
    message: message.data,
    context: context.data,
    isCommand: command !== undefined,
    ...(command !== undefined && { command }),
  };
}

function malformed(dedupeKey: string, reason: string): IgnoredUpdate {
  return { kind: "ignored", dedupeKey, reason, malformed: true };
}

function ignored(dedupeKey: string, reason: string): IgnoredUpdate {
  return { kind: "ignored", dedupeKey, reason };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function chatTypeOf(chat: TelegramChat): ChatType {
  switch (chat.type) {
    case "private":
      return "private";
    case "group":
    case "supergroup":
      return "group";
    case "channel":
      return "channel";
  }
}

function chatDisplayNameOf(chat: TelegramChat): string | undefined {
  if (chat.type !== "private") return nonEmpty(chat.title);
  return nonEmpty(fullName(chat.first_name, chat.last_name)) ?? nonEmpty(chat.username);
}

type SenderWithoutRoles = Omit<Sender, "roles">;

function senderOf(m: TelegramMessage, kind: MessageUpdateKind): SenderWithoutRoles | undefined {
  // In groups, a message sent on behalf of a chat (anonymous admin, linked channel) also carries
  // a placeholder `from` bot (GroupAnonymousBot, Channel_Bot); sender_chat is the real author.
  if (m.sender_chat !== undefined) return chatAsSender(m.sender_chat);
  if (m.from !== undefined) return userAsSender(m.from);
  if (kind === "channel_post") return chatAsSender(m.chat);
  return undefined;
}

function userAsSender(user: TelegramUser): SenderWithoutRoles {
  const fallback = nonEmpty(user.username) ?? String(user.id);
  return {
    id: String(user.id),
    displayName: nonEmpty(fullName(user.first_name, user.last_name)) ?? fallback,
    label: nonEmpty(user.first_name.trim()) ?? fallback,
    isBot: user.is_bot,
  };
}

function chatAsSender(chat: TelegramChat): SenderWithoutRoles {
  const name = nonEmpty(chat.title) ?? nonEmpty(fullName(chat.first_name, chat.last_name)) ?? nonEmpty(chat.username) ?? String(chat.id);
  return { id: String(chat.id), displayName: name, label: name, isBot: false };
}

function rolesOf(options: NormalizeUpdateOptions, chatId: string, senderId: string): string[] {
  if (options.rolesFor === undefined) return [];
  let tags: readonly string[];
  try {
    tags = options.rolesFor(chatId, senderId);
  } catch {
    // A failed role lookup must not lose the message; the sender is treated as having no roles.
    return [];
  }
  if (!Array.isArray(tags)) return [];
  return [...new Set(tags.filter((tag) => RoleTag.safeParse(tag).success))];
}

/**
 * The message this one replies to, unless it is only the forum topic's root: in a topic every
 * message without an explicit reply carries the topic-created service message as its reply.
 */
function effectiveReply(m: TelegramMessage): TelegramMessage["reply_to_message"] {
  const reply = m.reply_to_message;
  if (reply === undefined) return undefined;
  const isTopicRoot =
    m.is_topic_message === true && reply.message_id === m.message_thread_id && reply.forum_topic_created !== undefined;
  return isTopicRoot ? undefined : reply;
}

function parseCommand(text: string, entities: readonly TelegramMessageEntity[], bot: TelegramBotIdentity): TelegramCommand | undefined {
  const entity = entities.find((e) => e.type === "bot_command" && e.offset === 0);
  if (entity === undefined || !text.startsWith("/")) return undefined;
  const token = text.slice(1, entity.length);
  const at = token.indexOf("@");
  const name = (at === -1 ? token : token.slice(0, at)).toLowerCase();
  if (name === "") return undefined;
  const target = at === -1 ? undefined : token.slice(at + 1);
  return {
    name,
    args: text.slice(entity.length).trim(),
    addressedToOther: target !== undefined && target.toLowerCase() !== botUsernameOf(bot),
  };
}

function mentionsBotIn(text: string, entities: readonly TelegramMessageEntity[], bot: TelegramBotIdentity): boolean {
  const handle = `@${botUsernameOf(bot)}`;
  return entities.some(
    (e) =>
      (e.type === "mention" && text.slice(e.offset, e.offset + e.length).toLowerCase() === handle) ||
      (e.type === "text_mention" && e.user?.id === bot.id),
  );
}

function botUsernameOf(bot: TelegramBotIdentity): string {
  return bot.username.replace(/^@/, "").toLowerCase();
}

// Telegram sends one media item per message (albums arrive as several messages).
function attachmentsOf(m: TelegramMessage): Attachment[] {
  const caption = nonEmpty(m.caption);
  const photo = largestPhoto(m.photo ?? []);
  if (photo !== undefined) return [withoutUndefined({ type: "photo", fileId: photo.file_id, caption })];
  // An animation message also carries a `document` copy for old clients; the animation wins.
  const video = m.video ?? m.animation ?? m.video_note;
  if (video !== undefined) return [fileAttachment("video", video, caption)];
  const audio = m.audio ?? m.voice;
  if (audio !== undefined) return [fileAttachment("audio", audio, caption)];
  if (m.document !== undefined) return [fileAttachment("document", m.document, caption)];
  return [];
}

function largestPhoto(sizes: readonly TelegramPhotoSize[]): TelegramPhotoSize | undefined {
  let best: TelegramPhotoSize | undefined;
  for (const size of sizes) {
    if (best === undefined) {
      best = size;
      continue;
    }
    const area = size.width * size.height;
    const bestArea = best.width * best.height;
    if (area > bestArea || (area === bestArea && (size.file_size ?? 0) > (best.file_size ?? 0))) best = size;
  }
  return best;
}

function fileAttachment(type: Attachment["type"], file: TelegramFile, caption: string | undefined): Attachment {
  return withoutUndefined({
    type,
    fileId: file.file_id,
    // Attachment caps filename at 255 characters; a longer Telegram name is cut, not fatal.
    filename: nonEmpty(file.file_name)?.slice(0, 255),
    mimeType: nonEmpty(file.mime_type),
    caption,
  });
}

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

function fullName(first: string | undefined, last: string | undefined): string {
  return [first?.trim(), last?.trim()].filter((part) => part !== undefined && part !== "").join(" ");
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}
