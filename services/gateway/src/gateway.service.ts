import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Queue } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import type { ChannelRoutes } from "@nahida/channels";
import type { PluginView } from "@nahida/contracts";
import type { CronJobs } from "@nahida/cron";
import type { Database, Repositories } from "@nahida/db";
import type { Outbox, SessionEvents } from "@nahida/outbox";
import { serverOptions, type MetricsRouteOptions } from "@nahida/http";
import type { Logger } from "@nahida/observability";
import { pingRedis } from "@nahida/queue";
import type { TaskLedger } from "@nahida/tasks";
import { app } from "./app";
import { CookieSigner } from "./plugins/browser-sessions";
import { createSendService } from "./services/send.service";

export interface GatewayOptions {
  host: string;
  port: number;
  /** Largest accepted request body. */
  bodyLimitBytes: number;
  /** GATEWAY_TRUST_PROXY: which proxies' X-Forwarded-* headers to believe. */
  trustProxy?: boolean | string;
  db: Pick<Database, "checkReady">;
  repositories: Pick<Repositories, "deliveries" | "sessions" | "turns" | "tokens" | "cron" | "events" | "policies" | "quarantine" | "compactions">;
  /** Every send goes through it (it knows the registered channels and the workspace). */
  outbox: Outbox;
  /** Operators' events into sessions go through it (it appends to the target's lane). */
  sessionEvents: SessionEvents;
  /** Sub-agent tasks for the /api/tasks routes (an operator's stop ends a task through it). */
  ledger: TaskLedger;
  /** Cron job writes (checks, quota) for the /api/cron routes. */
  cronJobs: CronJobs;
  redis: Redis | Cluster;
  logger: Logger;
  prefix: string;
  rateLimitPerMinute: number;
  /** The queues bull-board shows under /admin/queues; no dashboard without them. */
  dashboard?: { queues: readonly Queue[]; readOnly: boolean };
  /** NAHIDA_API_TOKEN: bootstraps one admin token. */
  bootstrapToken?: string;
  /** GATEWAY_SESSION_SECRET: signs browsers' sign-in cookies; without it one is kept in Redis for every replica. */
  sessionSecret?: string;
  /** Serves `/metrics` from this registry (`NahidaMetrics`). */
  metrics?: MetricsRouteOptions;
  /** The loaded plugins, for `GET /api/plugins`. */
  plugins: readonly PluginView[];
  /** Channels the gateway serves itself (the web chat's page and socket). */
  channels?: readonly ChannelRoutes[];
}

export interface RunningGateway {
  server: FastifyInstance;
  /** Where it listens, e.g. http://127.0.0.1:8080 */
  address: string;
  stop(): Promise<void>;
}

export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const server = Fastify(serverOptions({
      logger: options.logger.child({ scope: "http" }) as unknown as FastifyBaseLogger,
      bodyLimitBytes: options.bodyLimitBytes,
      ...(options.trustProxy !== undefined ? { trustProxy: options.trustProxy } : {}),
    }));
  const { tokens, deliveries, sessions, turns, cron, events, policies, quarantine, compactions } = options.repositories;
  if (options.bootstrapToken) await tokens.upsertBootstrap(options.bootstrapToken);
  const cookieSigner = await CookieSigner.start(options.redis, options.prefix, options.sessionSecret);
  await server.register(app, {
    probes: [
      { name: "postgres", check: () => options.db.checkReady() },
      { name: "redis", check: () => pingRedis(options.redis, 2_000, options.prefix) },
    ],
    ...(options.metrics ? { metrics: options.metrics } : {}),
    ...(options.channels ? { channels: options.channels } : {}),
    api: {
      deliveries,
      sessions,
      turns,
      compactions,
      events,
      policies,
      sessionEvents: options.sessionEvents,
      tokens,
      ledger: options.ledger,
      quarantine,
      cron,
      cronJobs: options.cronJobs,
      redis: options.redis,
      prefix: options.prefix,
      rateLimitPerMinute: options.rateLimitPerMinute,
      send: createSendService({ outbox: options.outbox }),
      retryDelivery: (id) => options.outbox.retry(id),
      plugins: options.plugins,
      cookieSigner,
      ...(options.dashboard ? { queueDashboard: options.dashboard } : {}),
    },
  });
  const address = await server.listen({ host: options.host, port: options.port });
  return {
    server,
    address,
    async stop() {
      cookieSigner.stop();
      await server.close();
    },
  };
}
