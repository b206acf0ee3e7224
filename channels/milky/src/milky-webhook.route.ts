import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyPluginAsync } from "fastify";
import type { Logger } from "@nahida/observability";
import { logMilkyEventOutcome, type AcceptMilkyEvent } from "./milky-event.handler";

export interface MilkyWebhookRouteOptions {
  path: string;
  /** The implementation's access_token, which it sends as `Authorization: Bearer` with each push. */
  accessToken: string;
  acceptEvent: AcceptMilkyEvent;
  logger: Logger;
}

/** Compares secrets in constant time (hashing first makes the lengths equal). */
function sameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(createHash("sha256").update(given).digest(), createHash("sha256").update(expected).digest());
}

/**
 * The receiver of Milky's WebHook push: the bearer token is checked first (401 and nothing
 * stored when it is wrong), then the event is stored and enqueued before the 200 that
 * acknowledges it. A 500 (Postgres down) lets an implementation that retries deliver it
 * again; the dedupe by (self_id, scene, peer_id, message_seq) keeps it single.
 */
export const milkyWebhookRoute: FastifyPluginAsync<MilkyWebhookRouteOptions> = async (app, options) => {
  app.post(options.path, async (request, reply) => {
    const header = request.headers.authorization;
    const token = typeof header === "string" && header.startsWith("Bearer ") ? header.slice("Bearer ".length) : undefined;
    if (token === undefined || !sameSecret(token, options.accessToken)) {
      return reply.status(401).send({ error: { code: "unauthorized", message: "bad or missing Authorization: Bearer <access_token>" } });
    }
    const body = request.body;
    if (!body || typeof body !== "object" || Array.isArray(body) || typeof (body as { event_type?: unknown }).event_type !== "string") {
      return reply.status(400).send({ error: { code: "bad_request", message: "body must be a Milky event: an object with event_type, self_id and data" } });
    }
    logMilkyEventOutcome(options.logger, await options.acceptEvent(body));
    return reply.status(200).send({});
  });
};
