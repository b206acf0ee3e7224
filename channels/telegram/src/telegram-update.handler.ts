import type { Update } from "grammy/types";
import { InboundCommand } from "@nahida/contracts";
import { cleanEvent, type Intake, type IntakeOutcome, type NormalizedEvent } from "@nahida/ingress";
import { withSpan, type Logger } from "@nahida/observability";
import { DEFAULT_TELEGRAM_CHANNEL, normalizeUpdate, type NormalizeUpdateOptions, type TelegramBotIdentity } from "./telegram.normalizer";
import type { ChatAdminsCache } from "./chat-admins.cache";

/**
 * The update types Nahida asks Telegram for, in polling and webhook mode alike; edited
 * messages and callback queries are accepted and ignored by the normalizer.
 */
export const TELEGRAM_ALLOWED_UPDATES = ["message", "channel_post", "edited_message", "callback_query"] as const;

export interface TelegramUpdateHandlerOptions {
  bot: TelegramBotIdentity;
  /** The channel instance name. Default `telegram`. */
  channel?: string;
  intake: Intake;
  admins?: ChatAdminsCache;
}

/** One update as the intake takes it: the normalizer's message with its command, and the update as raw. */
export function normalizeTelegramEvent(update: unknown, bot: TelegramBotIdentity, options: NormalizeUpdateOptions = {}): NormalizedEvent {
  // NUL first: a field that is only NUL must fail the normalizer's own checks (and be
  // dropped there), not the intake's contract check, which would lose the whole message.
  const clean = cleanEvent(update);
  if (!clean.ok) return { kind: "unreadable", reason: `the update ${clean.error}`, raw: update };
  const normalized = normalizeUpdate(clean.value as Update, bot, options);
  if (normalized.kind === "ignored") return normalized.malformed ? { kind: "unreadable", reason: normalized.reason, raw: update } : { kind: "ignored", reason: normalized.reason };
  // A crafted, overlong name is cut to what the contract holds rather than losing the
  // message (or forgetting that the command was meant for another bot).
  const command = InboundCommand.safeParse(normalized.command && { ...normalized.command, name: normalized.command.name.slice(0, 64) });
  return {
    kind: "message",
    dedupeKey: normalized.dedupeKey,
    message: normalized.command && command.success ? { ...normalized.message, command: command.data } : normalized.message,
    context: normalized.context,
    raw: update,
  };
}

/**
 * The one path every update takes, from webhook or long poll, into the intake. It resolves
 * only after the message is stored and its job added, so the caller may then acknowledge the
 * update to Telegram; it rejects on an outage, when the update must not be acknowledged.
 */
export function createTelegramUpdateHandler(options: TelegramUpdateHandlerOptions) {
  const channel = options.channel ?? DEFAULT_TELEGRAM_CHANNEL;
  const accountId = String(options.bot.id);
  // The platform event's span: under the webhook's request, or the root of a polled update's trace.
  return (update: Update): Promise<IntakeOutcome> =>
    withSpan("telegram.update", { attributes: { "nahida.channel": channel, "telegram.update_id": update.update_id } }, () => acceptUpdate(update));

  async function acceptUpdate(update: Update): Promise<IntakeOutcome> {
    const chat = (update.message ?? update.channel_post)?.chat;
    if (options.admins && chat && (chat.type === "group" || chat.type === "supergroup")) {
      await options.admins.prefetch(String(chat.id));
    }
    const event = normalizeTelegramEvent(update, options.bot, {
      channel,
      // In a group or channel, a sender that is the chat itself is an anonymous admin or the
      // channel. (In a private chat the user's id equals the chat's: no role there.)
      rolesFor: (chatId, senderId) =>
        chat && chat.type !== "private" && senderId === chatId ? ["admin"] : options.admins?.rolesFor(chatId, senderId) ?? [],
    });
    return options.intake.offer(channel, accountId, event);
  }
}

export type AcceptUpdate = ReturnType<typeof createTelegramUpdateHandler>;

/**
 * Logs an update the caller acknowledges without a new row. An unstorable one is
 * acknowledged too: Telegram would redeliver it for a day, and the poller would stall on it.
 */
export function logUpdateOutcome(logger: Logger, updateId: number, outcome: IntakeOutcome): void {
  switch (outcome.kind) {
    case "stored":
    case "duplicate":
      return;
    case "ignored":
      logger.debug({ update_id: updateId, reason: outcome.reason }, "update ignored");
      return;
    case "quarantined":
      logger.error({ update_id: updateId, reason: outcome.reason, quarantineId: outcome.quarantineId }, "update cannot be stored as a message; quarantined");
      return;
    default: {
      const unreachable: never = outcome;
      throw new Error(`unknown intake outcome ${JSON.stringify(unreachable)}`);
    }
  }
}
