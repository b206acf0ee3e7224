import type { Update } from "grammy/types";
import type { InboundMessageRepository } from "@nahida/db";
import type { TypedQueue } from "@nahida/queue";
import { normalizeUpdate, type TelegramBotIdentity } from "./telegram.normalizer";
import type { ChatAdminsCache } from "./chat-admins.cache";

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
      rolesFor: (chatId, senderId) => options.admins?.rolesFor(chatId, senderId) ?? [],
    });
    if (normalized.kind === "ignored") return { kind: "ignored", reason: normalized.reason };
    const stored = await options.inbound.store({
      dedupeKey: normalized.dedupeKey,
      message: normalized.message,
      context: normalized.context,
      extra: normalized.command ? { command: normalized.command } : {},
      raw: update,
    });
    await options.queue.add("message.received", { inboundMessageId: stored.id }, { jobId: stored.id });
    return { kind: "stored", inboundMessageId: stored.id, duplicate: !stored.created };
  };
}

export type AcceptUpdate = ReturnType<typeof createTelegramUpdateHandler>;
