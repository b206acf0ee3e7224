import { z } from "zod";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { NahidaError, SendRequest, SendResponse } from "@nahida/contracts";
import type { SendService } from "../../services/send.service";
import { writeErrorResponses } from "../error-responses";

const IdempotencyHeaders = z.object({
  "idempotency-key": z.string().min(1).max(255).regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces").optional(),
});

export const sendRoutes: FastifyPluginAsyncZod<{ send: SendService }> = async (app, options) => {
  app.post(
    "/api/send",
    {
      config: { scope: "send", rateLimit: {} },
      schema: {
        operationId: "sendMessage", summary: "Send a message to a chat",
        description:
          "Queues a delivery to a typed chat address. With an Idempotency-Key header, repeating the same request returns the same delivery and sends once; the same key with another body is 409.",
        tags: ["send"],
        headers: IdempotencyHeaders,
        body: SendRequest,
        response: { 202: SendResponse, ...writeErrorResponses },
      },
    },
    async (request, reply) => {
      const key = request.headers["idempotency-key"];
      if (!request.token) throw new NahidaError("unauthorized", "authentication required");
      const { delivery } = await options.send(request.body, key ? { tokenId: request.token.id, key } : null);
      return reply.status(202).send({ delivery_id: delivery.id, status: delivery.status as z.infer<typeof SendResponse>["status"] });
    },
  );
};
