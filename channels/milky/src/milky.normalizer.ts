import { z } from "zod";
import { InboundMessage, MessageContext, formatChatAddress, parseChatAddress, type Attachment, type ChatType } from "@nahida/contracts";
import { cleanEvent, type NormalizedEvent } from "@nahida/ingress";
import {
  MilkyEventEnvelope,
  MilkyFriend,
  MilkyGroup,
  MilkyGroupMember,
  MilkyIncomingMessageCore,
  MilkySegmentData,
  MilkySegmentEnvelope,
  isMilkySegmentType,
} from "./milky-wire";

/** The instance name of a deployment's only Milky account. */
export const DEFAULT_MILKY_CHANNEL = "milky";

export interface NormalizeMilkyEventOptions {
  /** The QQ account this ingress serves (`get_login_info`'s `uin`): mentions of it address the bot. */
  selfId: number;
  /** The channel instance name: the ChatAddress channel and `message.channel`. Default `milky`. */
  channel?: string;
}

/** Message scenes and the chat type each is addressed as; a temp chat is answered privately. */
const SCENE_CHAT_TYPES: Record<string, ChatType> = { friend: "private", group: "group", temp: "private" };

// Dates past year 9999 would not render as an ISO 8601 timestamp.
const MAX_UNIX_SECONDS = 253_402_300_799;
/** Longest placeholder text taken from a segment's own fields (titles, summaries). */
const MAX_LABEL_LENGTH = 80;

/**
 * Turns one Milky event (a WebSocket frame, an SSE `data:` payload or a webhook body, parsed)
 * into an InboundMessage plus its MessageContext, or says why it is ignored. Pure and total:
 * it never throws, whatever the input.
 *
 * - Only `message_receive` becomes a message; every other event type is ignored by name, as
 *   the protocol asks of event types a client does not know.
 * - Friend and temp chats are `<channel>:private:<peer_id>`, groups `<channel>:group:<peer_id>`.
 * - `dedupeKey` is `<scene>:<peer_id>:<message_seq>`; the intake scopes it by the account
 *   (`self_id`), so the key of the issue, `(self_id, scene, peer_id, message_seq)`, is whole.
 * - Segments: text as written; a mention of the bot sets `mentionsBot` and is removed, other
 *   mentions read `@name`; a reply sets `replyTo` (and `mentionsBot` when it quotes the
 *   bot); image, record, video and file become attachments by their resource or file id;
 *   face, market_face, forward, light_app and xml become short bracketed text; a segment
 *   type newer than this code is text too (`[type]`), per the protocol's compatibility rules.
 */
export function normalizeMilkyEvent(event: unknown, options: NormalizeMilkyEventOptions): NormalizedEvent {
  try {
    // NUL first: a field that is only NUL must fail the normalizer's own checks (and be
    // dropped there), not the intake's contract check, which would lose the whole message.
    const clean = cleanEvent(event);
    if (!clean.ok) return { kind: "unreadable", reason: `the event ${clean.error}`, raw: event };
    const result = normalize(clean.value, options);
    return result.kind === "ignored" ? result : { ...result, raw: event };
  } catch (error) {
    // Last line of defence: a platform event must never crash the ingress.
    return { kind: "unreadable", reason: `normalizer failed: ${error instanceof Error ? error.message : String(error)}`, raw: event };
  }
}

function normalize(event: unknown, options: NormalizeMilkyEventOptions): NormalizedEvent {
  if (!isRecord(event)) return malformed("event is not an object");
  const envelope = MilkyEventEnvelope.safeParse(event);
  if (!envelope.success) return malformed(`malformed event: ${firstIssue(envelope.error)}`);
  const { event_type: eventType, self_id: selfId } = envelope.data;
  if (eventType !== "message_receive") return ignored(`${eventType.slice(0, 64)} events are not handled`);
  if (selfId !== options.selfId) return ignored(`event is for account ${selfId}, this ingress serves ${options.selfId}`);

  const core = MilkyIncomingMessageCore.safeParse(envelope.data.data);
  if (!core.success) return malformed(`malformed message_receive: ${firstIssue(core.error)}`);
  const m = core.data;
  const chatType = SCENE_CHAT_TYPES[m.message_scene];
  if (!Object.hasOwn(SCENE_CHAT_TYPES, m.message_scene) || chatType === undefined) {
    return ignored(`message scene ${JSON.stringify(m.message_scene.slice(0, 32))} is not handled`);
  }
  if (m.sender_id === selfId) return ignored("message was sent by this account itself");
  if (m.time > MAX_UNIX_SECONDS) return malformed("message time is out of range");

  const data = envelope.data.data as Record<string, unknown>;
  const content = readSegments(m.segments, selfId);
  const text = content.text.trim();
  if (text === "" && content.attachments.length === 0) return ignored("message has no text or supported media");

  const channel = options.channel ?? DEFAULT_MILKY_CHANNEL;
  const chat = formatChatAddress({ channel, type: chatType, id: String(m.peer_id) });
  const address = parseChatAddress(chat);
  if (!address.ok) return ignored(address.error.message);

  const who = senderOf(m.message_scene, data, m.sender_id);
  const mentionsBot = chatType === "private" || content.mentionsBot;
  const timestamp = new Date(m.time * 1000).toISOString();
  const message = InboundMessage.safeParse({
    messageId: String(m.message_seq),
    channel,
    chat,
    ...(who.chatDisplayName !== undefined && { chatDisplayName: who.chatDisplayName }),
    sender: { id: String(m.sender_id), displayName: who.displayName, label: who.label, roles: who.roles, isBot: false },
    text,
    attachments: content.attachments,
    ...(content.replyTo !== undefined && { replyTo: content.replyTo }),
    mentionsBot,
    timestamp,
  });
  if (!message.success) return malformed(`normalized message is invalid: ${z.prettifyError(message.error)}`);
  const context = MessageContext.safeParse({
    timestamp,
    channel,
    chatType,
    ...(who.chatDisplayName !== undefined && { chatDisplayName: who.chatDisplayName }),
    senderLabel: who.label,
    roles: who.roles,
  });
  if (!context.success) return malformed(`normalized context is invalid: ${z.prettifyError(context.error)}`);
  return { kind: "message", dedupeKey: `${m.message_scene}:${m.peer_id}:${m.message_seq}`, message: message.data, context: context.data, raw: event };
}

interface SegmentContent {
  text: string;
  attachments: Attachment[];
  replyTo?: string;
  mentionsBot: boolean;
}

function readSegments(segments: readonly unknown[], selfId: number): SegmentContent {
  const content: SegmentContent = { text: "", attachments: [], mentionsBot: false };
  for (const raw of segments) {
    const segment = MilkySegmentEnvelope.safeParse(raw);
    // Not even `{type}`: nothing to show.
    if (!segment.success) continue;
    const { type } = segment.data;
    if (!isMilkySegmentType(type)) {
      content.text += `[${placeholderName(type)}]`;
      continue;
    }
    readSegment(type, segment.data.data, selfId, content);
  }
  return content;
}

function readSegment(type: keyof typeof MilkySegmentData, data: unknown, selfId: number, content: SegmentContent): void {
  switch (type) {
    case "text": {
      const d = MilkySegmentData.text.safeParse(data);
      if (d.success) content.text += d.data.text;
      return;
    }
    case "mention": {
      const d = MilkySegmentData.mention.safeParse(data);
      if (!d.success) return;
      if (d.data.user_id === selfId) content.mentionsBot = true;
      else content.text += `@${label(d.data.name) ?? d.data.user_id}`;
      return;
    }
    case "mention_all":
      content.text += "@全体成员";
      return;
    case "reply": {
      const d = MilkySegmentData.reply.safeParse(data);
      if (!d.success || content.replyTo !== undefined) return;
      content.replyTo = String(d.data.message_seq);
      if (d.data.sender_id === selfId) content.mentionsBot = true;
      return;
    }
    case "image": {
      const d = MilkySegmentData.image.safeParse(data);
      if (!d.success || !usableId(d.data.resource_id)) content.text += "[image]";
      else content.attachments.push({ type: "photo", fileId: d.data.resource_id });
      return;
    }
    case "record": {
      const d = MilkySegmentData.record.safeParse(data);
      if (!d.success || !usableId(d.data.resource_id)) content.text += "[voice]";
      else content.attachments.push({ type: "audio", fileId: d.data.resource_id });
      return;
    }
    case "video": {
      const d = MilkySegmentData.video.safeParse(data);
      if (!d.success || !usableId(d.data.resource_id)) content.text += "[video]";
      else content.attachments.push({ type: "video", fileId: d.data.resource_id });
      return;
    }
    case "file": {
      const d = MilkySegmentData.file.safeParse(data);
      if (!d.success || !usableId(d.data.file_id)) {
        content.text += "[file]";
        return;
      }
      const filename = label(d.data.file_name, 255);
      content.attachments.push({ type: "document", fileId: d.data.file_id, ...(filename !== undefined && { filename }) });
      return;
    }
    case "face": {
      const d = MilkySegmentData.face.safeParse(data);
      const id = d.success ? label(d.data.face_id, 16) : undefined;
      content.text += id === undefined ? "[face]" : `[face ${id}]`;
      return;
    }
    case "market_face": {
      const d = MilkySegmentData.market_face.safeParse(data);
      content.text += bracketed((d.success ? label(d.data.summary) : undefined) ?? "sticker");
      return;
    }
    case "forward": {
      const d = MilkySegmentData.forward.safeParse(data);
      const title = d.success ? (label(d.data.title) ?? label(d.data.summary)) : undefined;
      content.text += title === undefined ? "[forwarded messages]" : `[forwarded messages: ${title}]`;
      return;
    }
    case "light_app": {
      const d = MilkySegmentData.light_app.safeParse(data);
      const name = d.success ? label(d.data.app_name) : undefined;
      content.text += name === undefined ? "[mini program]" : `[mini program: ${name}]`;
      return;
    }
    case "xml":
      content.text += "[xml card]";
      return;
    default: {
      const unreachable: never = type;
      throw new Error(`unknown segment type ${JSON.stringify(unreachable)}`);
    }
  }
}

interface SenderFacts {
  displayName: string;
  label: string;
  roles: string[];
  chatDisplayName?: string;
}

/** Names from the entities the implementation attached; an older one may send fewer. */
function senderOf(scene: string, data: Record<string, unknown>, senderId: number): SenderFacts {
  const fallback = String(senderId);
  if (scene === "group") {
    const member = MilkyGroupMember.safeParse(data["group_member"]).data;
    const group = MilkyGroup.safeParse(data["group"]).data;
    const nickname = label(member?.nickname);
    const card = label(member?.card);
    const shown = card ?? nickname ?? fallback;
    const roles = member?.role === "owner" || member?.role === "admin" ? [member.role] : [];
    const chatDisplayName = label(group?.group_name, 256);
    return {
      displayName: shown,
      // The group card is what the group sees; the nickname says who it is across groups.
      label: card !== undefined && nickname !== undefined && card !== nickname ? `${card} (${nickname})` : shown,
      roles,
      ...(chatDisplayName !== undefined && { chatDisplayName }),
    };
  }
  if (scene === "friend") {
    const friend = MilkyFriend.safeParse(data["friend"]).data;
    const name = label(friend?.nickname) ?? fallback;
    return { displayName: name, label: name, roles: [], chatDisplayName: name };
  }
  return { displayName: fallback, label: fallback, roles: [] };
}

/** An event that claims to be one Nahida takes but cannot be read as it: quarantined by the intake, with the event. */
function malformed(reason: string): NormalizedEvent {
  return { kind: "unreadable", reason, raw: null };
}

function ignored(reason: string): NormalizedEvent {
  return { kind: "ignored", reason };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
  return `${where}${issue?.message ?? "invalid"}`;
}

/** A non-blank name, cut to `max` characters; undefined otherwise. */
function label(value: string | undefined, max = MAX_LABEL_LENGTH): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === "" ? undefined : trimmed.slice(0, max);
}

/** Resource and file ids become `Attachment.fileId` (at most 1024 characters). */
function usableId(id: string): boolean {
  return id.trim() !== "" && id.length <= 1024;
}

/** A market face's summary usually is `[name]` already. */
function bracketed(text: string): string {
  return text.startsWith("[") && text.endsWith("]") ? text : `[${text}]`;
}

function placeholderName(type: string): string {
  const name = type.replace(/[^\w-]/g, "").slice(0, 32);
  return name === "" ? "unknown" : name;
}
