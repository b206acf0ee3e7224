import fp from "fastify-plugin";
import rateLimit from "@fastify/rate-limit";
import type { Cluster, Redis } from "ioredis";
import { NahidaError } from "@nahida/contracts";

export interface RateLimitOptions {
  redis: Redis | Cluster;
  /** Requests per token per minute, counted across all gateway replicas. */
  perMinute: number;
  prefix: string;
}

/** Per-token rate limit held in Redis, so every replica counts against the same budget. */
export const rateLimitPlugin = fp<RateLimitOptions>(async (app, options) => {
  await app.register(rateLimit, {
    global: false,
    hook: "preHandler",
    redis: options.redis,
    nameSpace: `${options.prefix}:ratelimit:`,
    max: options.perMinute,
    timeWindow: 60_000,
    keyGenerator: (request) => request.token?.id ?? request.ip,
    // Thrown by the plugin; the error handler turns it into the API's error shape.
    errorResponseBuilder: (_request, context) =>
      Object.assign(
        new NahidaError("rate_limited", `rate limit of ${context.max} requests per minute exceeded; retry in ${Math.ceil(context.ttl / 1000)} s`),
        { statusCode: 429 },
      ),
  });
});
