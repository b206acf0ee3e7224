import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import { createOpenAiLlm, startAgentWorker, type AgentWorkerOptions } from "@nahida/agent-worker";
import { DEFAULT_LEASE_MS, recoveryTimings, systemClock, type Readiness } from "@nahida/contracts";
import { createDatabase, createRepositories, type Database } from "@nahida/db";
import { Outbox, SessionEvents } from "@nahida/outbox";
import { ChannelRegistry } from "@nahida/channels";
import { startDelivery } from "@nahida/delivery";
import { CronJobs } from "@nahida/cron";
import { startGateway } from "@nahida/gateway";
import { createLaneIntake } from "@nahida/ingress";
import { LaneStore, wakeLane } from "@nahida/lanes";
import { createMetrics, type Logger, type NahidaMetrics } from "@nahida/observability";
import { RedisLeadership, clusterQueuePrefix, createQueueTelemetry, createQueues, createRedis, pingRedis, queueJobCounts, queueWorkerCounts } from "@nahida/queue";
import type { ToolDefinition } from "@nahida/plugin-sdk";
import { startJanitor, startScheduler } from "@nahida/scheduler";
import { TaskLedger, localExecutor } from "@nahida/tasks";
import { startChannelIngress } from "./channel-ingress";
import { ingressKind, type IngressServiceName } from "./channel-instances.env";
import { startHealthListener } from "./health-listener";
import { isIngressService, type LauncherEnv, type ServiceName } from "./launcher.env";
import { PreflightError, checkPooledSessions, checkRedis, preparePostgres } from "./preflight";

interface Stoppable {
  name: string;
  stop(): Promise<void>;
  /** The service's own readiness, on the probe listener; none means ready once started. */
  readiness?(): Promise<Readiness> | Readiness;
}

export interface RunningNahida {
  services: ServiceName[];
  /** http://host:port of the gateway, when it runs. */
  gatewayAddress?: string;
  /** http://host:port of the probe listener, when NAHIDA_HEALTH_PORT is set. */
  healthAddress?: string;
  db: Database;
  /** The process's one registry, served on `/metrics` of the gateway and the probe listener. */
  metrics: NahidaMetrics;
  stop(): Promise<void>;
}

/** What a deployment adds to the built-in services in code rather than configuration. */
export interface NahidaExtensions {
  /** Agent tools beyond the plugins' (a test's own). */
  tools?: ToolDefinition[];
  /** Lane item kinds beyond the built-in ones (docs/run.md). */
  laneKinds?: AgentWorkerOptions["laneKinds"];
}

/** Builds the clients the selected services need and starts them; `stop` drains in reverse. */
export async function startNahida(env: LauncherEnv, logger: Logger, extensions: NahidaExtensions = {}): Promise<RunningNahida> {
  // Migrations need a session of their own; behind a transaction pooler they go to Postgres directly.
  await Promise.all([preparePostgres(env.migrations.url, (message) => logger.info(message), env.migrations.variable), checkRedis(env.redis)]);

  const instance = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  const db = createDatabase({
    url: env.DATABASE_URL,
    poolSize: env.DATABASE_POOL_SIZE,
    pooler: env.DATABASE_POOLER,
    onPoolError: (e) => logger.warn({ err: e.message }, "postgres pool error"),
  });
  // Also without a transaction pooler: one that drops the TimeZone option it was sent
  // (PgBouncer's ignore_startup_parameters = options) would shift every instant unseen.
  try {
    await checkPooledSessions(db.pool, env.DATABASE_URL);
  } catch (error) {
    await db.close();
    throw error;
  }
  const connections: (Redis | Cluster)[] = [];
  let stopping = false;
  const createConnection = (purpose: string, blocking = true) => {
    const redis = createRedis({ target: env.redis, blocking, connectionName: `nahida:${purpose}:${instance}` });
    redis.on("error", (e) => logger.warn({ err: e.message, purpose }, "redis error"));
    // ioredis gives a connection up for good when a disconnect interrupts its reconnect
    // (redisTargetOptions says where we met it); every later command then fails with
    // "Connection is closed." Until this process stops, it is connected again.
    redis.on("end", () => {
      if (stopping) return;
      logger.warn({ purpose }, "redis connection ended; connecting again");
      setTimeout(() => {
        if (!stopping && redis.status === "end") redis.connect().catch(() => undefined);
      }, 1_000).unref();
    });
    connections.push(redis);
    return redis;
  };
  const redis = createConnection("shared", false);
  // On a cluster every key carries the prefix as a hash tag: one slot for all of them.
  const prefix = env.redis.kind === "cluster" ? clusterQueuePrefix(env.NAHIDA_QUEUE_PREFIX) : env.NAHIDA_QUEUE_PREFIX;
  const timings = recoveryTimings(env.NAHIDA_LEASE_MS ?? env.LANE_LEASE_MS ?? DEFAULT_LEASE_MS);
  // Jobs carry their trace only when this process traces; otherwise BullMQ adds nothing.
  const telemetry = env.tracing ? createQueueTelemetry() : undefined;
  const queues = createQueues(redis, prefix, telemetry);
  const metrics = createMetrics({ onSourceError: (source, e) => logger.warn({ source, err: e.message }, "a metric could not be read") });
  const laneStore = new LaneStore(db);
  metrics.setSources({
    queueJobs: () => queueJobCounts(Object.values(queues)),
    queueWorkers: () => queueWorkerCounts(Object.values(queues)),
    openLaneItems: () => laneStore.openItemStats(),
    tasks: () => repositories.tasks.countOpen(),
  });
  const metricsRoute = { render: () => metrics.render() };

  // Every channel kind, tool and command comes from a plugin (docs/plugins.md).
  const channelModule = (kind: string) => env.plugins.channels().find((m) => m.kind === kind)!;
  const registry = new ChannelRegistry();
  for (const instance of env.channels) {
    registry.register(channelModule(instance.kind).createSender(instance, { redis, prefix, ...(env.NAHIDA_WORKSPACE_DIR ? { workspaceDir: env.NAHIDA_WORKSPACE_DIR } : {}) }));
  }

  const clock = systemClock;
  const repositories = createRepositories(db);
  env.plugins.bind({ ledger: repositories, logger: (plugin) => logger.child({ plugin }) });
  const outbox = new Outbox({
    ...repositories,
    transaction: (fn) => db.prisma.$transaction(fn),
    queue: queues.outbound,
    channels: env.channels.map((c) => c.name),
    deliveryTtlMs: env.NAHIDA_DELIVERY_TTL_MS,
    clock,
    ...(env.NAHIDA_WORKSPACE_DIR ? { workspaceDir: env.NAHIDA_WORKSPACE_DIR } : {}),
  });
  const sessionEvents = new SessionEvents({
    events: repositories.events,
    sessions: repositories.sessions,
    turns: repositories.turns,
    appendToLane: (laneKey, item, tx) => laneStore.append(laneKey, item, tx),
    wake: (laneKey) => wakeLane(queues.lanes, laneKey),
    transaction: (fn) => db.prisma.$transaction(fn),
  });
  // Sub-agent tasks: the agent worker spawns and ends them, the gateway reads and stops them.
  const ledger = new TaskLedger({
    db,
    tasks: repositories.tasks,
    executor: localExecutor({ redis, prefix }),
    maxRunning: env.AGENT_SUBAGENT_MAX_RUNNING,
    wake: (laneKey) => wakeLane(queues.lanes, laneKey),
    metrics: metrics.subagents,
  });
  const cronJobs = new CronJobs({
    cron: repositories.cron,
    // An edit waits for a scheduler's claim of the same job to commit; give it the time one can take.
    transaction: (fn) => db.prisma.$transaction(fn, { timeout: 30_000, maxWait: 10_000 }),
    clock,
    defaultTz: env.NAHIDA_TIMEZONE,
    minIntervalMs: env.SCHEDULER_MIN_INTERVAL_MS,
    maxJobsPerTarget: env.SCHEDULER_MAX_JOBS_PER_TARGET,
    channels: env.channels.map((c) => c.name),
  });
  const intake = createLaneIntake({
    inbound: repositories.inbound,
    quarantine: repositories.quarantine,
    lanes: queues.lanes,
    redis,
    prefix,
    metrics: metrics.inbound,
    dedupeWindowMs: env.NAHIDA_DEDUPE_WINDOW_MS,
  });
  // Channels the gateway serves itself (the web chat): every gateway replica mounts their
  // routes. A chat's transcript is the ledger's: only for a bundled plugin or one allowed to
  // read it; another one's pages start empty.
  const readsLedger = (kind: string) =>
    env.plugins.views().some((p) => p.provides.channels.some((c) => c.kind === kind) && (p.bundled || p.permissions.ledger === "read"));
  const channelRoutes = () =>
    env.channels.flatMap((instance) => {
      const routes = channelModule(instance.kind).gatewayRoutes?.(instance, {
        intake,
        redis,
        createSubscriber: (purpose) => createConnection(purpose),
        prefix,
        transcript: readsLedger(instance.kind)
          ? (chat, limit) => repositories.transcripts.recent(chat, limit)
          : async () => [],
        logger: logger.child({ component: `channel-${instance.name}` }),
      });
      return routes ? [{ name: instance.name, ...routes }] : [];
    });
  const startIngress = async (name: IngressServiceName): Promise<Stoppable> => {
    const ingress = await startChannelIngress(name, channelModule(ingressKind(name)), env.channels, {
      intake,
      redis,
      prefix,
      logger: logger.child({ component: name }),
      bodyLimitBytes: env.GATEWAY_BODY_LIMIT_BYTES,
      leadershipTtlMs: timings.leadershipTtlMs,
    });
    return { name, stop: ingress.stop, readiness: ingress.readiness };
  };

  if (env.channels.length === 0) {
    logger.warn("no channel is configured: nothing is received or sent; set TELEGRAM_BOT_TOKEN or MILKY_BASE_URL (or NAHIDA_CHANNELS)");
  }
  const running: Stoppable[] = [];
  const result: RunningNahida = { services: env.NAHIDA_SERVICES, db, metrics, stop: async () => undefined };
  const starters: Record<Exclude<ServiceName, IngressServiceName>, () => Promise<Stoppable>> = {
    gateway: async () => {
      const channels = channelRoutes();
      const gateway = await startGateway({
        host: env.GATEWAY_HOST,
        port: env.GATEWAY_PORT,
        bodyLimitBytes: env.GATEWAY_BODY_LIMIT_BYTES,
        ...(env.GATEWAY_TRUST_PROXY !== undefined ? { trustProxy: env.GATEWAY_TRUST_PROXY } : {}),
        db,
        repositories,
        outbox,
        sessionEvents,
        ledger,
        cronJobs,
        redis,
        logger: logger.child({ component: "gateway" }),
        prefix,
        rateLimitPerMinute: env.NAHIDA_API_RATE_LIMIT_PER_MINUTE,
        metrics: metricsRoute,
        plugins: env.plugins.views(),
        channels,
        ...(env.NAHIDA_QUEUE_DASHBOARD !== "off"
          ? { dashboard: { queues: Object.values(queues).map((q) => q.queue), readOnly: env.NAHIDA_QUEUE_DASHBOARD === "read-only" } }
          : {}),
        ...(env.NAHIDA_API_TOKEN ? { bootstrapToken: env.NAHIDA_API_TOKEN } : {}),
        ...(env.GATEWAY_SESSION_SECRET ? { sessionSecret: env.GATEWAY_SESSION_SECRET } : {}),
      });
      result.gatewayAddress = gateway.address;
      const a = gateway.address;
      const dashboard = env.NAHIDA_QUEUE_DASHBOARD !== "off" ? ` · queues ${a}/admin/queues` : "";
      const pages = channels.map((c) => ` · ${c.name} ${a}${c.path}`).join("");
      logger.info({ address: a }, `gateway: API ${a}/api · docs ${a}/api/docs · console ${a}/console${dashboard}${pages} · ready ${a}/api/ready · metrics ${a}/metrics`);
      if (!env.NAHIDA_API_TOKEN && (await repositories.tokens.list()).every((t) => t.revokedAt)) {
        logger.warn("no API token is configured: the API refuses every request; set NAHIDA_API_TOKEN (an admin token) to use it");
      }
      return {
        name: "gateway",
        stop: gateway.stop,
        readiness: () => (gateway.server.server.listening ? { ok: true } : { ok: false, reason: "the gateway is not listening" }),
      };
    },
    "agent-worker": async () => {
      const llmConfigured = env.OPENAI_BASE_URL !== undefined || env.OPENAI_API_KEY !== undefined;
      const worker = await startAgentWorker({
        db,
        repositories,
        outbox,
        cronJobs,
        maxEventDepth: env.AGENT_EVENT_MAX_DEPTH,
        subagents: {
          ledger,
          maxChildren: env.AGENT_SUBAGENT_MAX_CHILDREN,
          maxRunning: env.AGENT_SUBAGENT_MAX_RUNNING,
          timeoutMs: env.AGENT_SUBAGENT_TIMEOUT_S * 1_000,
          forkChars: env.AGENT_SUBAGENT_FORK_CHARS,
        },
        clock,
        redis,
        createConnection: (purpose) => createConnection(purpose),
        prefix,
        queues,
        workerId: instance,
        llm: llmConfigured
          ? createOpenAiLlm({
              baseURL: env.OPENAI_BASE_URL ?? "https://api.openai.com/v1",
              apiKey: env.OPENAI_API_KEY ?? "not-needed",
              model: env.OPENAI_MODEL,
              metrics: metrics.llm,
            })
          : null,
        ...(env.NAHIDA_WORKSPACE_DIR ? { workspaceDir: env.NAHIDA_WORKSPACE_DIR } : {}),
        timeZone: env.NAHIDA_TIMEZONE,
        maxIterations: env.AGENT_MAX_ITERATIONS,
        historyTurns: env.AGENT_HISTORY_TURNS,
        context: { windowTokens: env.NAHIDA_CONTEXT_TOKENS, threshold: env.AGENT_COMPACT_THRESHOLD },
        commandTimeoutMs: env.AGENT_COMMAND_TIMEOUT_MS,
        concurrency: env.AGENT_CONCURRENCY,
        timings,
        tools: [...env.plugins.tools(), ...(extensions.tools ?? [])],
        commands: env.plugins.commands(),
        ...(extensions.laneKinds ? { laneKinds: extensions.laneKinds } : {}),
        // Half the shutdown budget for running runs; the rest for handing back and closing.
        shutdownGraceMs: Math.floor(env.NAHIDA_SHUTDOWN_TIMEOUT_MS / 2),
        logger: logger.child({ component: "agent-worker" }),
        metrics: { lanes: metrics.lanes, queue: metrics.queue, compaction: metrics.compaction },
        ...(telemetry ? { telemetry } : {}),
      });
      if (llmConfigured) logger.info(`agent-worker: model ${env.OPENAI_MODEL} at ${new URL(env.OPENAI_BASE_URL ?? "https://api.openai.com/v1").origin}, ${env.AGENT_CONCURRENCY} sessions at once`);
      else logger.warn("agent-worker: no LLM configured (OPENAI_BASE_URL / OPENAI_API_KEY): commands work, free text gets a hint");
      return { name: "agent-worker", stop: worker.stop, readiness: worker.readiness };
    },
    scheduler: async () => {
      const scheduler = startScheduler({
        cron: repositories.cron,
        sessions: repositories.sessions,
        outbox,
        lanes: laneStore,
        wakeLane: (laneKey) => wakeLane(queues.lanes, laneKey),
        // A claim of 100 jobs on a loaded machine can take longer than Prisma's 5 s default;
        // rolled back at the limit, it would be claimed and rolled back again every poll.
        transaction: (fn) => db.prisma.$transaction(fn, { timeout: 60_000, maxWait: 10_000 }),
        clock,
        logger: logger.child({ component: "scheduler" }),
        pollMs: env.SCHEDULER_POLL_MS,
        maxFailures: env.SCHEDULER_MAX_FAILURES,
        metrics: metrics.cron,
      });
      const janitor = startJanitor({
        retention: repositories.retention,
        keepDays: {
          raw_events: env.NAHIDA_RETENTION_RAW_EVENTS_DAYS,
          inbound_messages: env.NAHIDA_RETENTION_INBOUND_DAYS,
          inbound_quarantine: env.NAHIDA_RETENTION_INBOUND_DAYS,
          lane_items: env.NAHIDA_RETENTION_LANES_DAYS,
          lane_runs: env.NAHIDA_RETENTION_LANES_DAYS,
          deliveries: env.NAHIDA_RETENTION_DELIVERIES_DAYS,
          session_events: env.NAHIDA_RETENTION_SESSION_EVENTS_DAYS,
          cron_runs: env.NAHIDA_RETENTION_CRON_RUNS_DAYS,
        },
        leadership: new RedisLeadership(redis, `${prefix}:janitor`, instance, timings.leadershipTtlMs),
        clock,
        logger: logger.child({ component: "janitor" }),
        metrics: metrics.janitor,
        batchSize: env.NAHIDA_JANITOR_BATCH,
        intervalMs: env.NAHIDA_JANITOR_INTERVAL_MS,
      });
      logger.info(`scheduler: polling every ${env.SCHEDULER_POLL_MS} ms at most, time zone ${env.NAHIDA_TIMEZONE}`);
      return {
        name: "scheduler",
        stop: async () => {
          await Promise.all([scheduler.stop(), janitor.stop()]);
        },
        readiness: scheduler.readiness,
      };
    },
    delivery: async () => {
      const delivery = await startDelivery({
        deliveries: repositories.deliveries,
        createConnection: (purpose) => createConnection(purpose),
        prefix,
        outboundQueue: queues.outbound,
        registry,
        concurrency: env.DELIVERY_CONCURRENCY,
        clock,
        timings,
        ...(env.DELIVERY_UNAVAILABLE_MAX_WAIT_MS ? { unavailableMaxWaitMs: env.DELIVERY_UNAVAILABLE_MAX_WAIT_MS } : {}),
        logger: logger.child({ component: "delivery" }),
        metrics: { delivery: metrics.delivery, queue: metrics.queue },
        ...(telemetry ? { telemetry } : {}),
      });
      logger.info({ channels: registry.channels() }, `delivery: sending to ${registry.channels().join(", ") || "no channel"}, ${env.DELIVERY_CONCURRENCY} at once`);
      return { name: "delivery", stop: delivery.stop, readiness: delivery.readiness };
    },
  };

  const closeClients = async () => {
    stopping = true;
    await Promise.all(Object.values(queues).map((q) => q.close().catch(() => undefined)));
    await db.close();
    for (const connection of connections) connection.disconnect();
  };
  try {
    for (const name of env.NAHIDA_SERVICES) running.push(await (isIngressService(name) ? startIngress(name) : starters[name]()));
    if (env.NAHIDA_HEALTH_PORT !== undefined) {
      const health = await startHealthListener({
        host: env.NAHIDA_HEALTH_HOST,
        port: env.NAHIDA_HEALTH_PORT,
        probes: [
          // Postgres answers and every migration is applied.
          { name: "postgres", check: () => db.checkReady() },
          { name: "redis", check: () => pingRedis(redis, 2_000, prefix) },
          ...running.map((service) => ({ name: service.name, check: () => service.readiness?.() ?? { ok: true as const } })),
        ],
        logger,
        metrics: metricsRoute,
      });
      result.healthAddress = health.address;
      logger.info({ address: health.address }, `probes: live ${health.address}/health · ready ${health.address}/ready · metrics ${health.address}/metrics`);
      // First to stop: an orchestrator sees the process go away before its services do.
      running.unshift({ name: "health", stop: health.stop });
    }
  } catch (error) {
    stopping = true;
    for (const service of running.reverse()) await service.stop().catch(() => undefined);
    await closeClients();
    throw error;
  }

  // Stop in start order: intake (gateway, ingress) first, delivery last, so the replies
  // of runs that finish while stopping still go out.
  result.stop = async () => {
    stopping = true;
    for (const service of running) {
      await service.stop().catch((e) => logger.error({ service: service.name, err: (e as Error).message }, "stop failed"));
    }
    await closeClients();
  };
  return result;
}
