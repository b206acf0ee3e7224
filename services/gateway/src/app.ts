import type { FastifyPluginAsync } from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import type { Redis } from "ioredis";
import type { ApiTokenRepository, DeliveryRepository, SessionRepository, TurnRepository } from "@nahida/db";
import { authPlugin } from "./plugins/auth";
import { errorHandlerPlugin } from "@nahida/http";
import { openApiPlugin } from "./plugins/openapi";
import { rateLimitPlugin } from "./plugins/rate-limit";
import { deliveryRoutes } from "./routes/deliveries/deliveries.route";
import { healthRoutes, type ReadinessProbe } from "./routes/health/health.route";
import { sendRoutes } from "./routes/send/send.route";
import { sessionRoutes } from "./routes/sessions/sessions.route";
import { tokenRoutes } from "./routes/tokens/tokens.route";
import type { SendService } from "./services/send.service";

export interface ApiOptions {
  deliveries: DeliveryRepository;
  sessions: SessionRepository;
  turns: TurnRepository;
  tokens: ApiTokenRepository;
  send: SendService;
  /** Shared Redis for the per-token rate limit. */
  redis: Redis;
  prefix: string;
  rateLimitPerMinute: number;
}

export interface AppOptions {
  probes: ReadinessProbe[];
  /** The authenticated REST API; without it only health and readiness are served. */
  api?: ApiOptions;
}

/** The gateway application as a Fastify plugin, so tests and the server mount the same thing. */
export const app: FastifyPluginAsync<AppOptions> = async (fastify, options) => {
  fastify.setValidatorCompiler(validatorCompiler);
  fastify.setSerializerCompiler(serializerCompiler);
  await fastify.register(errorHandlerPlugin);
  await fastify.register(healthRoutes, { probes: options.probes });
  const api = options.api;
  if (!api) return;
  await fastify.register(openApiPlugin);
  await fastify.register(authPlugin, { tokens: api.tokens });
  await fastify.register(rateLimitPlugin, { redis: api.redis, perMinute: api.rateLimitPerMinute, prefix: api.prefix });
  await fastify.register(sendRoutes, { send: api.send });
  await fastify.register(deliveryRoutes, { deliveries: api.deliveries });
  await fastify.register(sessionRoutes, { sessions: api.sessions, turns: api.turns });
  await fastify.register(tokenRoutes, { tokens: api.tokens });
};
