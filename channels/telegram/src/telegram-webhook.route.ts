import { timingSafeEqual, createHash } from "node:crypto";
import type { FastifyPluginAsync } from "fastify";
import type { Update } from "grammy/types";
import type { Logger } from "@nahida/observability";
import { logUpdateOutcome, type AcceptUpdate } from "./telegram-update.handler";

export interface TelegramWebhookRouteOptions {
  path: string;
  secret: string;
  acceptUpdate: AcceptUpdate;
  logger: Logger;
}

/** Compares secrets in constant time (hashing first makes the lengths equal). */
function sameSecret(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * Telegram's webhook: the secret header is checked first (401 and nothing stored when it
 * is wrong), then the update is stored and enqueued before the 200 that acknowledges it.
 * A 500 makes Telegram deliver it again later, which the update_id dedupe absorbs.
 */
export const telegramWebhookRoute: FastifyPluginAsync<TelegramWebhookRouteOptions> = async (app, options) => {
  app.post(options.path, async (request, reply) => {
    const header = request.headers["x-telegram-bot-api-secret-token"];
    if (typeof header !== "string" || !sameSecret(header, options.secret)) {
      return reply.status(401).send({ error: { code: "unauthorized", message: "bad or missing X-Telegram-Bot-Api-Secret-Token" } });
    }
    const body = request.body as Partial<Update> | undefined;
    if (!body || typeof body !== "object" || Array.isArray(body) || !Number.isSafeInteger(body.update_id)) {
      return reply.status(400).send({ error: { code: "bad_request", message: "body must be a Telegram Update object with an integer update_id" } });
    }
    const update = body as Update;
    logUpdateOutcome(options.logger, update.update_id, await options.acceptUpdate(update));
    return reply.status(200).send({ ok: true });
  });
};
