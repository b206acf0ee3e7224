import fp from "fastify-plugin";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import { jsonSchemaTransformObject } from "fastify-type-provider-zod";
import { withOperationExamples } from "./openapi-examples";

/** OpenAPI document generated from the route schemas (the zod contracts), with an operationId, a summary and an example for every operation, and a docs page. */
export const openApiPlugin = fp(async (app) => {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: { title: "Nahida API", version: "1.0.0", description: "Send messages, follow deliveries, read sessions, manage cron jobs, the send policy and tokens. Scripts authenticate with `Authorization: Bearer <token>`; browsers sign in once (`POST /api/auth/session`) and send `X-CSRF-Token` with every change." },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
      security: [{ bearer: [] }],
    },
    transform: withOperationExamples,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(swaggerUi, { routePrefix: "/api/docs" });
  app.get("/api/openapi.json", { schema: { hide: true } }, async () => app.swagger());
});
