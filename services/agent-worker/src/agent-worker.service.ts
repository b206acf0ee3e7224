import type { Telemetry, Worker } from "bullmq";
import type { Redis } from "ioredis";
import type { Clock, Readiness, RecoveryTimings, SessionVisibility } from "@nahida/contracts";
import { RunRepository, type Database, type Repositories } from "@nahida/db";
import { LaneProducer, LaneRuntime, LaneStore, laneInterruptChannel, wakeLane } from "@nahida/lanes";
import type { CronJobs } from "@nahida/cron";
import type { LaneMetrics, Logger, QueueMetrics } from "@nahida/observability";
import { SessionEvents, type Outbox } from "@nahida/outbox";
import { consumerReadiness, createConsumer, type TypedQueue } from "@nahida/queue";
import { createAgentLoop } from "./agent/agent-loop";
import type { LlmClient } from "./agent/llm.client";
import { ToolRegistry, type ToolDefinition } from "./agent/tool-registry";
import { cronTools, type CronToolScope } from "./agent/tools/cron.tools";
import { sessionTools } from "./agent/tools/session.tools";
import { currentTimeTool } from "./agent/tools/current-time.tool";
import { workspaceReadTool } from "./agent/tools/workspace-read.tool";
import { builtinCommands } from "./commands/builtin.commands";
import type { CommandContext } from "./commands/command-context";
import { CommandRouter } from "./commands/command-router";
import { createContextBuilder } from "./context/context-builder";
import { createEnvelopeRenderer } from "./context/envelope";
import { startInboundSweeper } from "./inbound/inbound.sweeper";
import { createMessageReceivedHandler } from "./inbound/message-received.consumer";
import { createSessionRunHandler } from "./run/session-run.handler";

export interface AgentWorkerOptions {
  db: Pick<Database, "prisma" | "pool">;
  repositories: Pick<Repositories, "inbound" | "sessions" | "turns" | "cron" | "events">;
  /** Replies and tools' sends go through it. */
  outbox: Outbox;
  /** Checks the cron jobs the agent's tools and `/cron` create and edit. */
  cronJobs: CronJobs;
  /** Which jobs the cron tools reach: this chat's (default) or any target's. */
  cronToolScope?: CronToolScope;
  /** Which sessions the session tools see and send to (default `tree`: own and children). */
  sessionVisibility?: SessionVisibility;
  /** The loop guard: the longest chain of agent events between sessions (default 5). */
  maxEventDepth?: number;
  clock: Clock;
  /** Non-blocking Redis for producers, flags and publishing. */
  redis: Redis;
  /** Creates blocking / subscriber connections this service owns. */
  createConnection: (purpose: string) => Redis;
  prefix: string;
  queues: { inbound: TypedQueue<"inbound">; lanes: TypedQueue<"lanes">; outbound: TypedQueue<"outbound"> };
  workerId: string;
  /** Null when no LLM is configured. */
  llm: LlmClient | null;
  workspaceDir?: string;
  timeZone: string;
  maxIterations: number;
  historyTurns: number;
  commandTimeoutMs: number;
  concurrency: number;
  /** Lane lease, job locks and sweeps, all from one lease (`recoveryTimings`). */
  timings: RecoveryTimings;
  /** Tools beyond the built-in ones (a deployment's own). */
  tools?: ToolDefinition[];
  /** On stop, how long running runs may finish before they are handed back to other workers. */
  shutdownGraceMs: number;
  logger: Logger;
  /** Lane runs, and wait and handler times of the `lanes` and `inbound` queues. */
  metrics?: { lanes: LaneMetrics; queue: QueueMetrics };
  /** Continues the traces of `lanes` and `inbound` jobs (`createQueueTelemetry`); none when tracing is off. */
  telemetry?: Telemetry;
}

export interface RunningAgentWorker {
  lanes: LaneRuntime;
  /** Ready while both its consumers run: inbound messages and lane wake-ups. */
  readiness(): Readiness;
  stop(): Promise<void>;
}

const MAX_ATTEMPTS = 3;
const DEFAULT_MAX_EVENT_DEPTH = 5;

export async function startAgentWorker(o: AgentWorkerOptions): Promise<RunningAgentWorker> {
  const logger = o.logger;
  const { inbound, sessions, turns, cron, events } = o.repositories;
  const laneStore = new LaneStore(o.db);
  const sessionEvents = new SessionEvents({
    events,
    sessions,
    turns,
    appendToLane: (laneKey, kind, refId, tx) => laneStore.append(laneKey, kind, refId, tx),
    wake: (laneKey) => wakeLane(o.queues.lanes, laneKey),
    transaction: (fn) => o.db.prisma.$transaction(fn),
  });
  const laneProducer = new LaneProducer(o.db, o.queues.lanes);
  const abortChannel = laneInterruptChannel(o.prefix);
  const owned: Redis[] = [];
  const connection = (purpose: string) => {
    const redis = o.createConnection(purpose);
    owned.push(redis);
    return redis;
  };

  const tools = new ToolRegistry().register(currentTimeTool({ defaultTimeZone: o.timeZone }));
  if (o.workspaceDir) tools.register(workspaceReadTool({ workspaceDir: o.workspaceDir }));
  tools.register(...cronTools({ cron, scope: o.cronToolScope ?? "chat" }));
  tools.register(...sessionTools({ events, sessions, turns, visibility: o.sessionVisibility ?? "tree", maxEventDepth: o.maxEventDepth ?? DEFAULT_MAX_EVENT_DEPTH, logger }));
  tools.register(...(o.tools ?? []));
  const commands = new CommandRouter<CommandContext>({ timeoutMs: o.commandTimeoutMs }).register(...builtinCommands);

  const lanes = new LaneRuntime({
    db: o.db,
    wakeQueue: o.queues.lanes,
    consumerConnection: connection("lanes-worker"),
    prefix: o.prefix,
    workerId: o.workerId,
    concurrency: o.concurrency,
    timings: o.timings,
    maxAttempts: MAX_ATTEMPTS,
    shutdownGraceMs: o.shutdownGraceMs,
    logger,
    ...(o.metrics ? { metrics: o.metrics.lanes, queueMetrics: o.metrics.queue } : {}),
    ...(o.telemetry ? { telemetry: o.telemetry } : {}),
    handler: createSessionRunHandler({
      redis: o.redis,
      prefix: o.prefix,
      inbound,
      runs: new RunRepository(o.db.pool),
      sessions,
      turns,
      cron,
      cronJobs: o.cronJobs,
      outbox: o.outbox,
      events,
      sessionEvents,
      outbound: o.queues.outbound,
      commands,
      contextBuilder: createContextBuilder({
        envelope: createEnvelopeRenderer({ timeZone: o.timeZone }),
        historyTurns: o.historyTurns,
        ...(o.workspaceDir ? { workspaceDir: o.workspaceDir } : {}),
      }),
      runAgent: o.llm ? createAgentLoop({ llm: o.llm, tools, maxIterations: o.maxIterations }) : null,
      model: o.llm?.model ?? null,
      historyTurns: o.historyTurns,
      maxAttempts: MAX_ATTEMPTS,
      clock: o.clock,
      logger,
    }),
  });

  const subscriber = connection("lanes-abort");
  await subscriber.subscribe(abortChannel);
  subscriber.on("message", (_channel: string, laneKey: string) => {
    if (lanes.abortRun(laneKey)) logger.info({ laneKey }, "run stopped by /stop");
  });

  const messageReceived = createMessageReceivedHandler({ inbound, sessions, lanes: laneProducer, redis: o.redis, abortChannel, commandPrefix: commands.prefix, clock: o.clock });
  const inboundWorker: Worker = createConsumer(
    "inbound",
    { "message.received": messageReceived },
    {
      connection: connection("inbound-worker"),
      prefix: o.prefix,
      concurrency: o.concurrency,
      lockDurationMs: o.timings.jobLockMs,
      stalledIntervalMs: o.timings.stalledCheckMs,
      onFailed: (job, error) => logger.warn({ jobId: job?.id, err: error.message }, "inbound job failed"),
      onError: (error) => logger.error({ err: error.message }, "inbound worker error"),
      ...(o.metrics ? { metrics: o.metrics.queue } : {}),
      ...(o.telemetry ? { telemetry: o.telemetry } : {}),
    },
  );
  lanes.start();

  const inboundSweep = startInboundSweeper({
    inbound,
    route: messageReceived,
    logger,
    intervalMs: o.timings.inboundSweepMs,
    graceMs: o.timings.inboundGraceMs,
  });

  return {
    lanes,
    readiness() {
      const inbound = consumerReadiness(inboundWorker, "inbound");
      return inbound.ok ? lanes.readiness() : inbound;
    },
    async stop() {
      inboundSweep.stop();
      await inboundWorker.close();
      await lanes.close();
      for (const redis of owned) redis.disconnect();
    },
  };
}
