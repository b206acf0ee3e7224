import type { FastifyPluginAsync } from "fastify";

export interface ReadinessProbe {
  name: string;
  check(): Promise<{ ok: true } | { ok: false; reason: string }>;
}

export interface HealthRouteOptions {
  probes: ReadinessProbe[];
}

/** `/api/health`: the process answers. `/api/ready`: every dependency answers (503 otherwise). */
export const healthRoutes: FastifyPluginAsync<HealthRouteOptions> = async (app, options) => {
  app.get("/api/health", async () => ({ status: "ok" }));

  app.get("/api/ready", async (_request, reply) => {
    const results = await Promise.all(
      options.probes.map(async (probe) => {
        try {
          return { name: probe.name, result: await probe.check() };
        } catch (error) {
          return { name: probe.name, result: { ok: false as const, reason: (error as Error).message } };
        }
      }),
    );
    const checks = Object.fromEntries(results.map(({ name, result }) => [name, result.ok ? "ok" : result.reason]));
    const ready = results.every(({ result }) => result.ok);
    return reply.status(ready ? 200 : 503).send({ status: ready ? "ready" : "not_ready", checks });
  });
};
