import Fastify, { type FastifyBaseLogger } from "fastify";
import type { ReadinessProbe } from "@nahida/contracts";
import { checkReadiness, metricsRoute, type MetricsRouteOptions } from "@nahida/http";
import type { Logger } from "@nahida/observability";

export interface HealthListenerOptions {
  host: string;
  port: number;
  /** Postgres, Redis and every service this process runs. */
  probes: readonly ReadinessProbe[];
  logger: Logger;
  /** `/metrics` (Prometheus text) for the process's registry. */
  metrics?: MetricsRouteOptions;
}

export interface RunningHealthListener {
  /** http://host:port */
  address: string;
  stop(): Promise<void>;
}

/**
 * The probe port of a process (`NAHIDA_HEALTH_PORT`), whatever roles it runs, so an
 * orchestrator can probe a delivery or an agent-worker that serves no HTTP otherwise:
 * `/health` answers while the process runs, `/ready` while every probe passes (503 with
 * each probe's answer otherwise). Probes come every few seconds: their requests are
 * logged only at warn and above. `/metrics` serves the process's registry, whatever roles
 * it runs.
 */
export async function startHealthListener(o: HealthListenerOptions): Promise<RunningHealthListener> {
  const server = Fastify({ loggerInstance: o.logger.child({ scope: "health" }) as unknown as FastifyBaseLogger });
  server.get("/health", { logLevel: "warn" }, async () => ({ status: "ok" }));
  server.get("/ready", { logLevel: "warn" }, async (_request, reply) => {
    const report = await checkReadiness(o.probes);
    return reply.status(report.httpStatus).send(report.body);
  });
  if (o.metrics) await server.register(metricsRoute, o.metrics);
  const address = await server.listen({ host: o.host, port: o.port });
  return { address, stop: () => server.close() };
}
