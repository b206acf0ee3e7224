import { z } from "zod";
import { port } from "@nahida/config";

/** Telegram's own rule for `secret_token`: 1-256 characters of A-Z, a-z, 0-9, _ and -. */
const webhookSecret = z.string().regex(/^[A-Za-z0-9_-]{1,256}$/, "must be 1-256 characters of A-Z a-z 0-9 _ -");

export const telegramEnvSchema = z.object({
  /** Bot token from @BotFather. Without it the Telegram ingress and sender are off. */
  TELEGRAM_BOT_TOKEN: z.string().regex(/^\d+:[A-Za-z0-9_-]+$/, "must look like 123456:ABC-DEF...").optional(),
  TELEGRAM_API_ROOT: z.url({ message: "must be a URL like https://api.telegram.org" }).default("https://api.telegram.org"),
  TELEGRAM_MODE: z.enum(["polling", "webhook"]).default("polling"),
  TELEGRAM_WEBHOOK_SECRET: webhookSecret.optional(),
  /** Public HTTPS URL Telegram should post to; when set, setWebhook is called at start. */
  TELEGRAM_WEBHOOK_URL: z.url().optional(),
  TELEGRAM_WEBHOOK_HOST: z.string().min(1).default("127.0.0.1"),
  TELEGRAM_WEBHOOK_PORT: port.default(8081),
  /** Long-poll timeout of getUpdates. */
  TELEGRAM_POLL_TIMEOUT_SECONDS: z.coerce.number().int().min(0).max(50).default(25),
});
export type TelegramEnv = z.infer<typeof telegramEnvSchema>;
