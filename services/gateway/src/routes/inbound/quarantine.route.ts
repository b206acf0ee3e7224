import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { QuarantineList, QuarantineListQuery } from "@nahida/contracts";
import type { InboundQuarantineRepository } from "@nahida/db";
import { readErrorResponses } from "../error-responses";

/**
 * Events the ingress acknowledged but could not store as messages (docs/reliability.md):
 * what an operator looks at when a platform says it delivered something nobody answered.
 */
/** How much of each raw event a page shows: 200 of them at 1 MB each would be a 200 MB answer. */
const RAW_VIEW_CHARS = 4_000;

export const quarantineRoutes: FastifyPluginAsyncZod<{ quarantine: InboundQuarantineRepository }> = async (app, { quarantine }) => {
  app.get(
    "/api/inbound/quarantine",
    {
      // Raw platform events (other routes strip them): operators only.
      config: { scope: "admin", rateLimit: {} },
      schema: {
        operationId: "listQuarantinedEvents", summary: "Quarantined platform events",
        description:
          "Admin only (raw platform events). Events a channel delivered and the ingress acknowledged, but could not store as messages: they broke the message contract, Postgres refused them, or they nested too deep to read. Newest first, with the reason and the event as cleaned JSON text.",
        tags: ["inbound"],
        querystring: QuarantineListQuery,
        response: { 200: QuarantineList, ...readErrorResponses },
      },
    },
    async (request) => {
      const { limit, offset, channel } = request.query;
      const { events, total } = await quarantine.list({ limit, offset, ...(channel ? { channel } : {}) });
      return {
        events: events.map((e) => ({
          id: e.id,
          channel: e.channel,
          account_id: e.accountId,
          reason: e.reason,
          raw: e.raw.slice(0, RAW_VIEW_CHARS),
          raw_truncated: e.raw.length > RAW_VIEW_CHARS,
          received_at: e.receivedAt.toISOString(),
        })),
        total,
        limit,
        offset,
      };
    },
  );
};
