import type { FastifyPluginAsync } from "fastify";
import { errorHandlerPlugin } from "./plugins/error-handler";
import { healthRoutes, type ReadinessProbe } from "./routes/health/health.route";

export interface AppOptions {
  probes: ReadinessProbe[];
}

/** The gateway application as a Fastify plugin, so tests and the server mount the same thing. */
export const app: FastifyPluginAsync<AppOptions> = async (fastify, options) => {
  await fastify.register(errorHandlerPlugin);
  await fastify.register(healthRoutes, { probes: options.probes });
};
