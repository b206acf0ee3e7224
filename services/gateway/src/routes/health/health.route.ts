import { z } from "zod";
import type { FastifyPluginAsync } from "fastify";
import type { ReadinessProbe } from "@nahida/contracts";
import { checkReadiness } from "@nahida/http";

export type { ReadinessProbe };

const ReadyView = z.object({ status: z.enum(["ready", "not_ready"]), checks: z.record(z.string(), z.string()) }).meta({ id: "Readiness" });

export interface HealthRouteOptions {
  probes: ReadinessProbe[];
}

/**
 * `/api/health`: the process answers. `/api/ready`: every dependency answers (503 otherwise).
 * Probes come every few seconds from a load balancer or Kubernetes: their requests are
 * logged only at warn and above, so they do not drown the info log.
 */
export const healthRoutes: FastifyPluginAsync<HealthRouteOptions> = async (app, options) => {
  app.get(
    "/api/health",
    { logLevel: "warn", schema: { operationId: "health", summary: "The gateway answers", tags: ["operations"], security: [], response: { 200: z.object({ status: z.literal("ok") }) } } },
    async () => ({ status: "ok" as const }),
  );

  app.get("/api/ready", { logLevel: "warn", schema: { operationId: "ready", summary: "Every dependency of the gateway answers (503 otherwise, with each check's answer)", tags: ["operations"], security: [], response: { 200: ReadyView, 503: ReadyView } } }, async (_request, reply) => {
    const report = await checkReadiness(options.probes);
    return reply.status(report.httpStatus).send(report.body);
  });
};
