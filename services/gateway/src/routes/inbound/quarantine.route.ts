import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { QuarantineList, QuarantineListQuery } from "@nahida/contracts";
import type { InboundQuarantineRepository } from "@nahida/db";
import { readErrorResponses } from "../error-responses";

/**
 * Events the ingress acknowledged but could not store as messages (docs/reliability.md):
 * what an operator looks at when a platform says it delivered something nobody answered.
 */
export const quarantineRoutes: FastifyPluginAsyncZod<{ quarantine: InboundQuarantineRepository }> = async (app, { quarantine }) => {
  app.get(
    "/api/inbound/quarantine",
    {
      config: { scope: "read", rateLimit: {} },
      schema: {
        summary: "Quarantined platform events",
        description:
          "Events a channel delivered and the ingress acknowledged, but could not store as messages: they broke the message contract, Postgres refused them, or they nested too deep to read. Newest first, with the reason and the event as cleaned JSON text.",
        tags: ["inbound"],
        querystring: QuarantineListQuery,
        response: { 200: QuarantineList, ...readErrorResponses },
      },
    },
    async (request) => {
      const { limit, offset, channel } = request.query;
      const { events, total } = await quarantine.list({ limit, offset, ...(channel ? { channel } : {}) });
      return {
        events: events.map((e) => ({ id: e.id, channel: e.channel, account_id: e.accountId, reason: e.reason, raw: e.raw, received_at: e.receivedAt.toISOString() })),
        total,
        limit,
        offset,
      };
    },
  );
};
