import type { FastifyPluginAsync, FastifySchema } from "fastify";

export interface MetricsRouteOptions {
  /** The process's registry in the Prometheus text format (`NahidaMetrics.render`). */
  render(): Promise<{ contentType: string; body: string }>;
  /** The route's schema, where it is documented in an OpenAPI document (the gateway's). */
  schema?: FastifySchema;
}

/**
 * `GET /metrics` in the Prometheus text format, unauthenticated like the probes: serve it
 * on a port only the scraper reaches. Scrapes come every few seconds: logged at warn only.
 */
export const metricsRoute: FastifyPluginAsync<MetricsRouteOptions> = async (app, options) => {
  app.get("/metrics", { logLevel: "warn", ...(options.schema ? { schema: options.schema } : {}) }, async (_request, reply) => {
    const { contentType, body } = await options.render();
    return reply.type(contentType).send(body);
  });
};
