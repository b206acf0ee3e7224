import type { Update } from "grammy/types";
import { isDataError, type InboundMessageRepository } from "@nahida/db";
import type { TypedQueue } from "@nahida/queue";
import { normalizeUpdate, type TelegramBotIdentity } from "./telegram.normalizer";
import type { ChatAdminsCache } from "./chat-admins.cache";

/** Postgres refuses this update's data; storing it again cannot succeed. */
export class UnstorableUpdateError extends Error {
  override name = "UnstorableUpdateError";
  constructor(
    readonly updateId: number,
    options: { cause: unknown },
  ) {
    super(`update ${updateId} cannot be stored`, options);
  }
}

export type AcceptOutcome =
  | { kind: "stored"; inboundMessageId: string; duplicate: boolean }
  | { kind: "ignored"; reason: string };

export interface TelegramUpdateHandlerOptions {
  bot: TelegramBotIdentity;
  inbound: InboundMessageRepository;
  queue: TypedQueue<"inbound">;
  admins?: ChatAdminsCache;
}

/**
 * The one path every update takes, from webhook or long poll: normalize, store, enqueue.
 * It resolves only after the message is stored and its job added, so the caller may then
 * acknowledge the update to Telegram. A redelivered update (same update_id) is stored once;
 * its job is added again under the same job id, which BullMQ ignores while the first exists
 * and the lane ignores after (one lane item per inbound message).
 */
/**
 * The update types Nahida asks Telegram for, in polling and webhook mode alike; edited
 * messages and callback queries are accepted and ignored by the normalizer.
 */
export const TELEGRAM_ALLOWED_UPDATES = ["message", "channel_post", "edited_message", "callback_query"] as const;

/** Removes NUL characters from every string: Postgres text and jsonb cannot store them. */
export function stripNul<T>(value: T): T {
  if (typeof value === "string") return value.replaceAll("\u0000", "") as T;
  if (Array.isArray(value)) return value.map(stripNul) as T;
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [stripNul(k), stripNul(v)])) as T;
  }
  return value;
}

export function createTelegramUpdateHandler(options: TelegramUpdateHandlerOptions) {
  return async function acceptUpdate(incoming: Update): Promise<AcceptOutcome> {
    const update = stripNul(incoming);
    const chat = (update.message ?? update.channel_post)?.chat;
    if (options.admins && chat && (chat.type === "group" || chat.type === "supergroup")) {
      await options.admins.prefetch(String(chat.id));
    }
    const normalized = normalizeUpdate(update, options.bot, {
      // In a group or channel, a sender that is the chat itself is an anonymous admin or the
      // channel. (In a private chat the user's id equals the chat's: no role there.)
      rolesFor: (chatId, senderId) =>
        chat && chat.type !== "private" && senderId === chatId ? ["admin"] : options.admins?.rolesFor(chatId, senderId) ?? [],
    });
    if (normalized.kind === "ignored") return { kind: "ignored", reason: normalized.reason };
    let stored;
    try {
      stored = await options.inbound.store({
        dedupeKey: normalized.dedupeKey,
        message: normalized.command ? { ...normalized.message, command: normalized.command } : normalized.message,
        context: normalized.context,
        raw: update,
      });
    } catch (error) {
      if (isDataError(error)) throw new UnstorableUpdateError(update.update_id, { cause: error });
      throw error;
    }
    await options.queue.add("message.received", { inboundMessageId: stored.id }, { jobId: stored.id });
    return { kind: "stored", inboundMessageId: stored.id, duplicate: !stored.created };
  };
}

export type AcceptUpdate = ReturnType<typeof createTelegramUpdateHandler>;
