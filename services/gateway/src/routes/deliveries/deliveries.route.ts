import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { DeliveryView, IdParam, NahidaError } from "@nahida/contracts";
import type { DeliveryRepository } from "@nahida/db";
import { readErrorResponses } from "../error-responses";
import { deliveryView } from "../views";

export const deliveryRoutes: FastifyPluginAsyncZod<{ deliveries: DeliveryRepository }> = async (app, { deliveries }) => {
  app.get(
    "/api/deliveries/:id",
    {
      config: { scope: "read", rateLimit: {} },
      schema: {
        summary: "Status of a delivery",
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
};
