import type { FastifyPluginAsync } from "fastify";
import type { ReadinessProbe } from "@nahida/contracts";
import { checkReadiness } from "@nahida/http";

export type { ReadinessProbe };

export interface HealthRouteOptions {
  probes: ReadinessProbe[];
}

/**
 * `/api/health`: the process answers. `/api/ready`: every dependency answers (503 otherwise).
 * Probes come every few seconds from a load balancer or Kubernetes: their requests are
 * logged only at warn and above, so they do not drown the info log.
 */
export const healthRoutes: FastifyPluginAsync<HealthRouteOptions> = async (app, options) => {
  app.get("/api/health", { logLevel: "warn" }, async () => ({ status: "ok" }));

  app.get("/api/ready", { logLevel: "warn" }, async (_request, reply) => {
    const report = await checkReadiness(options.probes);
    return reply.status(report.httpStatus).send(report.body);
  });
};
