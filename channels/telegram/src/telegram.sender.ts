import { Api, GrammyError, HttpError, InputFile } from "grammy";
import type { Attachment, ChatAddress, OutboundMessage } from "@nahida/contracts";
import { resolveWorkspacePath } from "@nahida/workspace";
import { ChannelSendError, type ChannelSender, type SendProgress } from "@nahida/channels";
import { traceTelegramApi } from "./telegram-api.tracing";
import { renderTelegramChunks } from "./telegram-text";
import { DEFAULT_TELEGRAM_CHANNEL } from "./telegram.normalizer";

export interface TelegramSenderOptions {
  token: string;
  /** The instance name: the ChatAddress channel this sender is registered for. Default `telegram`. */
  channel?: string;
  apiRoot: string;
  /** Attachments given as paths are resolved inside this directory. */
  workspaceDir?: string;
}

type Part = { kind: "text"; html: string; plain: string } | { kind: "attachment"; attachment: Attachment };

/**
 * Telegram's `description`, or a readable stand-in: proxies and emulators may answer with
 * `error_code` alone, and grammY then carries `description: undefined` despite its type.
 */
function describeGrammyError(error: GrammyError): string {
  const description: unknown = error.description;
  if (typeof description === "string" && description !== "") return description;
  return typeof error.error_code === "number" ? `Telegram error ${error.error_code} (no description)` : "Telegram error (no error_code, no description)";
}

/**
 * Maps a Telegram failure onto retry classes by `error_code`: 429 rate limited (keeping
 * `retry_after`), 5xx transient, other codes permanent. An answer without a numeric
 * `error_code` says nothing about the cause, so it is retried as transient.
 */
/** Network error codes that mean the request never reached Telegram. */
const NEVER_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

export function classifyTelegramError(error: unknown): ChannelSendError {
  if (error instanceof ChannelSendError) return error;
  if (error instanceof GrammyError) {
    const description = describeGrammyError(error);
    const errorCode: unknown = error.error_code;
    const retryAfter: unknown = error.parameters?.retry_after;
    if (typeof errorCode !== "number") return new ChannelSendError("transient", description, {}, { cause: error });
    const details = { error_code: errorCode, ...(typeof retryAfter === "number" ? { retry_after: retryAfter } : {}) };
    if (errorCode === 429) return new ChannelSendError("rate_limited", description, details, { cause: error });
    if (errorCode >= 500) return new ChannelSendError("transient", description, details, { cause: error });
    return new ChannelSendError("permanent", description, details, { cause: error });
  }
  // grammY's own HttpError message leaves out the request URL, which holds the bot token;
  // the inner error's message does not, so only its code is kept.
  if (error instanceof HttpError) {
    const code = (error.error as { code?: unknown } | undefined)?.code;
    // Refused or unresolvable: the request never left. Anything else (reset, timeout) may
    // have been accepted with its answer lost.
    const outcomeUnknown = !(typeof code === "string" && NEVER_SENT_CODES.has(code));
    return new ChannelSendError("transient", `${error.message}${typeof code === "string" ? ` (${code})` : ""}`, outcomeUnknown ? { outcome_unknown: true } : {}, {
      cause: error,
    });
  }
  return new ChannelSendError("transient", (error as Error)?.message ?? String(error), {}, { cause: error });
}

const isEntityError = (error: unknown) =>
  error instanceof GrammyError && error.error_code === 400 && /can't parse entities|unsupported start tag|can't find end/i.test(describeGrammyError(error));

/**
 * Telegram sender: Markdown text rendered to Telegram HTML in chunks under 4096 characters
 * (a chunk Telegram rejects for its entities is resent as plain text), then attachments.
 * reply_to goes on the first part only; a forum topic (the address thread) on every part.
 */
export class TelegramSender implements ChannelSender {
  readonly channel: string;
  private readonly api: Api;

  constructor(private readonly o: TelegramSenderOptions) {
    this.channel = o.channel ?? DEFAULT_TELEGRAM_CHANNEL;
    // grammY waits 500 s by default; a send that hangs that long would hold up every later
    // message to the chat (they go out in order).
    this.api = new Api(o.token, { apiRoot: o.apiRoot, timeoutSeconds: 60 });
    traceTelegramApi(this.api);
  }

  async send(target: ChatAddress, message: OutboundMessage, progress: SendProgress): Promise<void> {
    const parts: Part[] = [
      ...(message.text.trim() ? renderTelegramChunks(message.text).map((c) => ({ kind: "text" as const, html: c.html, plain: c.plain })) : []),
      ...message.attachments.map((attachment) => ({ kind: "attachment" as const, attachment })),
    ];
    // Every file is checked before the first part goes out: a bad path must not leave
    // the chat with half a message.
    const files = new Map<Attachment, InputFile | string>();
    for (const attachment of message.attachments) files.set(attachment, await this.fileFor(attachment));
    for (let index = progress.sentParts; index < parts.length; index++) {
      const common = {
        ...(target.thread !== undefined ? { message_thread_id: Number(target.thread) } : {}),
        ...(index === 0 && message.replyTo ? { reply_parameters: { message_id: Number(message.replyTo), allow_sending_without_reply: true } } : {}),
      };
      let messageId: number;
      try {
        messageId = await this.sendPart(target.id, parts[index]!, common, files);
      } catch (error) {
        const failure = classifyTelegramError(error);
        // Defence in depth: no error text leaves this class with the token in it.
        if (failure.description.includes(this.o.token)) {
          throw new ChannelSendError(failure.kind, failure.description.replaceAll(this.o.token, "[token]"), failure.details);
        }
        throw failure;
      }
      await progress.recordPart(index, String(messageId), index === parts.length - 1);
    }
  }

  async sendChatAction(target: ChatAddress, action: "typing"): Promise<void> {
    try {
      await this.api.sendChatAction(target.id, action, target.thread !== undefined ? { message_thread_id: Number(target.thread) } : {});
    } catch (error) {
      throw classifyTelegramError(error);
    }
  }

  private async sendPart(chatId: string, part: Part, common: Record<string, unknown>, files: Map<Attachment, InputFile | string>): Promise<number> {
    if (part.kind === "text") {
      try {
        return (await this.api.sendMessage(chatId, part.html, { ...common, parse_mode: "HTML" })).message_id;
      } catch (error) {
        if (!isEntityError(error)) throw error;
        return (await this.api.sendMessage(chatId, part.plain, common)).message_id;
      }
    }
    const { attachment } = part;
    const file = files.get(attachment)!;
    const extra = { ...common, ...(attachment.caption ? { caption: attachment.caption } : {}) };
    switch (attachment.type) {
      case "photo":
        return (await this.api.sendPhoto(chatId, file, extra)).message_id;
      case "document":
        return (await this.api.sendDocument(chatId, file, extra)).message_id;
      case "audio":
        return (await this.api.sendAudio(chatId, file, extra)).message_id;
      case "video":
        return (await this.api.sendVideo(chatId, file, extra)).message_id;
    }
  }

  private async fileFor(attachment: Attachment): Promise<InputFile | string> {
    if (attachment.fileId) return attachment.fileId;
    if (attachment.url) return attachment.url;
    if (!attachment.path) throw new ChannelSendError("permanent", "attachment has no path, url or fileId");
    if (!this.o.workspaceDir) throw new ChannelSendError("permanent", "attachment paths need NAHIDA_WORKSPACE_DIR");
    const resolved = await resolveWorkspacePath(this.o.workspaceDir, attachment.path);
    if (!resolved.ok) throw new ChannelSendError("permanent", resolved.error.message);
    return new InputFile(resolved.value, attachment.filename);
  }
}
