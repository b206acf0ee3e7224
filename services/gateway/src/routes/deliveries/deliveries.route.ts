import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { DeliveryList, DeliveryListQuery, DeliveryView, ErrorBody, IdParam, NahidaError, type Result } from "@nahida/contracts";
import type { Delivery, DeliveryRepository } from "@nahida/db";
import type { OutboxError } from "@nahida/outbox";
import { readErrorResponses } from "../error-responses";
import { deliveryView } from "../views";

export interface DeliveryRouteOptions {
  deliveries: DeliveryRepository;
  /** The outbox's retry: the same row back to `queued` once, and its job revived. */
  retry: (deliveryId: string) => Promise<Result<Delivery, OutboxError>>;
}

export const deliveryRoutes: FastifyPluginAsyncZod<DeliveryRouteOptions> = async (app, { deliveries, retry }) => {
  app.get(
    "/api/deliveries",
    {
      config: { scope: "read", rateLimit: {} },
      schema: {
        operationId: "listDeliveries", summary: "List deliveries, newest first",
        description: "Filters combine: status, target, source, uncertain and a creation time range (`since` inclusive, `until` exclusive).",
        tags: ["send"],
        querystring: DeliveryListQuery,
        response: { 200: DeliveryList, ...readErrorResponses },
      },
    },
    async (request) => {
      const q = request.query;
      const page = await deliveries.list({
        limit: q.limit,
        offset: q.offset,
        ...(q.status ? { status: q.status } : {}),
        ...(q.target ? { target: q.target } : {}),
        ...(q.source ? { source: q.source } : {}),
        ...(q.uncertain !== undefined ? { uncertain: q.uncertain } : {}),
        ...(q.since ? { createdSince: new Date(q.since) } : {}),
        ...(q.until ? { createdBefore: new Date(q.until) } : {}),
      });
      return { deliveries: page.deliveries.map(deliveryView), total: page.total, limit: q.limit, offset: q.offset };
    },
  );

  app.get(
    "/api/deliveries/:id",
    {
      config: { scope: "read", rateLimit: {} },
      schema: {
        operationId: "getDelivery", summary: "Status of a delivery",
        tags: ["send"],
        params: IdParam,
        response: { 200: DeliveryView, ...readErrorResponses },
      },
    },
    async (request) => {
      // A delivery past its TTL reads as expired even before the delivery service sees it.
      await deliveries.expireIfDue(request.params.id);
      const delivery = await deliveries.get(request.params.id);
      if (!delivery) throw new NahidaError("not_found", `delivery ${request.params.id} does not exist`);
      return deliveryView(delivery);
    },
  );

  app.post(
    "/api/deliveries/:id/retry",
    {
      config: { scope: "send", rateLimit: {} },
      schema: {
        operationId: "retryDelivery", summary: "Retry a failed or expired delivery",
        description:
          "One more attempt on the same row, with a fresh TTL: parts the platform accepted before are not sent again. Retrying one that is not failed or expired (already retried, queued, sending or sent) is 409, so concurrent retries send it once.",
        tags: ["send"],
        params: IdParam,
        response: { 202: DeliveryView, ...readErrorResponses, 409: ErrorBody },
      },
    },
    async (request, reply) => {
      const retried = await retry(request.params.id);
      if (!retried.ok) throw new NahidaError(retried.error.code, retried.error.message);
      request.log.info({ deliveryId: retried.value.id, tokenId: request.token?.id }, "delivery retried");
      return reply.status(202).send(deliveryView(retried.value));
    },
  );
};
