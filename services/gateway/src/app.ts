import websocket from "@fastify/websocket";
import type { FastifyPluginAsync } from "fastify";
import { z } from "zod";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import type { Queue } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import type { ChannelRoutes } from "@nahida/channels";
import type { PluginView } from "@nahida/contracts";
import type { CronJobs } from "@nahida/cron";
import type { ApiTokenRepository, CompactionRepository, CronRepository, InboundQuarantineRepository, DeliveryRepository, PolicyRepository, SessionEventRepository, SessionRepository, TurnRepository } from "@nahida/db";
import { authPlugin } from "./plugins/auth";
import { browserSessionsPlugin, type CookieSigner } from "./plugins/browser-sessions";
import { TokenCache } from "./plugins/token-cache";
import { errorHandlerPlugin, jsonBodyPlugin, metricsRoute, type MetricsRouteOptions } from "@nahida/http";
import { openApiPlugin } from "./plugins/openapi";
import { rateLimitPlugin } from "./plugins/rate-limit";
import { queueDashboardRoutes } from "./routes/admin/queues.route";
import { authSessionRoutes } from "./routes/auth/auth-session.route";
import { consoleRoutes } from "./routes/console/console.route";
import { cronRoutes } from "./routes/cron/cron.route";
import { deliveryRoutes, type DeliveryRouteOptions } from "./routes/deliveries/deliveries.route";
import { healthRoutes, type ReadinessProbe } from "./routes/health/health.route";
import { sendRoutes } from "./routes/send/send.route";
import { pluginRoutes } from "./routes/plugins/plugins.route";
import { policyRoutes } from "./routes/policy/policy.route";
import { sessionEventRoutes, type SessionEventRouteOptions } from "./routes/sessions/session-events.route";
import { sessionRoutes } from "./routes/sessions/sessions.route";
import { taskRoutes, type TaskRouteOptions } from "./routes/tasks/tasks.route";
import { quarantineRoutes } from "./routes/inbound/quarantine.route";
import { tokenRoutes } from "./routes/tokens/tokens.route";
import type { SendService } from "./services/send.service";

export interface ApiOptions {
  deliveries: DeliveryRepository;
  sessions: SessionRepository;
  turns: TurnRepository;
  /** Compaction checkpoints, marked in a session's history. */
  compactions: CompactionRepository;
  /** Session events. */
  events: SessionEventRepository;
  /** The send policy document. */
  policies: PolicyRepository;
  /** `POST /api/sessions/:id/events`: the outbox's session events. */
  sessionEvents: SessionEventRouteOptions["sessionEvents"];
  tokens: ApiTokenRepository;
  /** Events acknowledged but not storable as messages. */
  quarantine: InboundQuarantineRepository;
  /** Sub-agent tasks: read, and stopped by operators. */
  ledger: TaskRouteOptions["ledger"];
  cron: CronRepository;
  cronJobs: CronJobs;
  send: SendService;
  /** `POST /api/deliveries/:id/retry`: the outbox's retry. */
  retryDelivery: DeliveryRouteOptions["retry"];
  /** Shared Redis for the per-token rate limit. */
  redis: Redis | Cluster;
  prefix: string;
  rateLimitPerMinute: number;
  /** How long a token lookup is trusted; a revocation on another replica takes effect within it. Default 5 s. */
  tokenCacheMs?: number;
  /** The loaded plugins (`GET /api/plugins`). */
  plugins: readonly PluginView[];
  /** bull-board under `/admin/queues` for admin tokens; off without it. */
  queueDashboard?: { queues: readonly Queue[]; readOnly: boolean };
  /** Signs browsers' sign-in cookies. */
  cookieSigner: CookieSigner;
}

/** A revoked token stops working on every replica within this long. */
export const TOKEN_CACHE_MS = 5_000;

export interface AppOptions {
  probes: ReadinessProbe[];
  /** The authenticated REST API; without it only health and readiness are served. */
  api?: ApiOptions;
  /** `/metrics` (Prometheus text) for the process's registry; not served without it. */
  metrics?: MetricsRouteOptions;
  /** The routes of channels the gateway serves itself (the web chat), public like a webhook. */
  channels?: readonly ChannelRoutes[];
}

const METRICS_SCHEMA = {
  operationId: "metrics",
  summary: "This process's metrics in the Prometheus text format",
  description: "Unauthenticated like the probes: serve it where only the scraper reaches it. The scrape-time gauges (queue jobs and workers, open lane items, sub-agent tasks) are the whole deployment's.",
  tags: ["operations"],
  security: [],
  response: { 200: z.string() },
};

/** Largest WebSocket message a browser may send (a chat message is far smaller). */
const WEBSOCKET_MAX_PAYLOAD_BYTES = 64 * 1024;

/** The gateway application as a Fastify plugin, so tests and the server mount the same thing. */
export const app: FastifyPluginAsync<AppOptions> = async (fastify, options) => {
  fastify.setValidatorCompiler(validatorCompiler);
  fastify.setSerializerCompiler(serializerCompiler);
  await fastify.register(errorHandlerPlugin);
  await fastify.register(jsonBodyPlugin);
  // The document first: it takes in only the routes registered after it.
  if (options.api) await fastify.register(openApiPlugin);
  await fastify.register(healthRoutes, { probes: options.probes });
  if (options.metrics) await fastify.register(metricsRoute, { ...options.metrics, ...(options.api ? { schema: METRICS_SCHEMA } : {}) });
  if (options.channels?.length) {
    await fastify.register(websocket, { options: { maxPayload: WEBSOCKET_MAX_PAYLOAD_BYTES } });
    // Each in a scope of its own: a channel's hooks (even fastify-plugin ones) never reach the API.
    for (const channel of options.channels) await fastify.register(async (scope) => scope.register(channel.plugin));
  }
  const api = options.api;
  if (!api) return;
  const tokenCache = new TokenCache(api.tokens, { ttlMs: api.tokenCacheMs ?? TOKEN_CACHE_MS, maxEntries: 10_000, touchEveryMs: 60_000 });
  await fastify.register(browserSessionsPlugin, { redis: api.redis, keyPrefix: api.prefix, signer: api.cookieSigner });
  await fastify.register(authPlugin, { tokens: tokenCache });
  await fastify.register(rateLimitPlugin, { redis: api.redis, perMinute: api.rateLimitPerMinute, prefix: api.prefix });
  await fastify.register(sendRoutes, { send: api.send });
  await fastify.register(deliveryRoutes, { deliveries: api.deliveries, retry: api.retryDelivery });
  await fastify.register(sessionRoutes, { sessions: api.sessions, turns: api.turns, compactions: api.compactions });
  await fastify.register(sessionEventRoutes, { sessionEvents: api.sessionEvents, events: api.events });
  await fastify.register(taskRoutes, { ledger: api.ledger, sessions: api.sessions });
  await fastify.register(quarantineRoutes, { quarantine: api.quarantine });
  await fastify.register(policyRoutes, { policies: api.policies });
  await fastify.register(cronRoutes, { cron: api.cron, cronJobs: api.cronJobs });
  await fastify.register(pluginRoutes, { plugins: api.plugins });
  await fastify.register(tokenRoutes, { tokens: api.tokens, onRevoked: (id) => tokenCache.forget(id) });
  await fastify.register(authSessionRoutes, { tokens: tokenCache });
  await fastify.register(consoleRoutes, { queueDashboard: api.queueDashboard !== undefined });
  if (api.queueDashboard) await fastify.register(queueDashboardRoutes, { ...api.queueDashboard, tokens: tokenCache });
};
