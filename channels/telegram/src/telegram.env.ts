import { z } from "zod";
import { port } from "@nahida/config";

/** Telegram's own rule for `secret_token`: 1-256 characters of A-Z, a-z, 0-9, _ and -. */
const webhookSecret = z.string().regex(/^[A-Za-z0-9_-]{1,256}$/, "must be 1-256 characters of A-Z a-z 0-9 _ -");

/**
 * The variables of one Telegram bot, without the instance prefix: the launcher reads the
 * default instance's as `TELEGRAM_BOT_TOKEN`, ..., and those of an instance `support` as
 * `SUPPORT_BOT_TOKEN`, ....
 */
export const telegramEnvSchema = z.object({
  /** Bot token from @BotFather. */
  BOT_TOKEN: z.string({ error: "is required" }).regex(/^\d+:[A-Za-z0-9_-]+$/, "must look like 123456:ABC-DEF..."),
  API_ROOT: z.url({ message: "must be a URL like https://api.telegram.org" }).default("https://api.telegram.org"),
  MODE: z.enum(["polling", "webhook"]).default("polling"),
  WEBHOOK_SECRET: webhookSecret.optional(),
  /** Public HTTPS URL Telegram should post to; when set, setWebhook is called at start. */
  WEBHOOK_URL: z.url().optional(),
  WEBHOOK_HOST: z.string().min(1).default("127.0.0.1"),
  WEBHOOK_PORT: port.default(8081),
  /** Long-poll timeout of getUpdates. */
  POLL_TIMEOUT_SECONDS: z.coerce.number().int().min(0).max(50).default(25),
});
export type TelegramEnv = z.infer<typeof telegramEnvSchema>;
