import type { Telemetry } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import type { Clock, Readiness, RecoveryTimings } from "@nahida/contracts";
import type { Database, Repositories } from "@nahida/db";
import { LaneRuntime, LaneStore, laneInterruptChannel, laneSupersedeChannel, readSupersede, wakeLane } from "@nahida/lanes";
import type { CronJobs } from "@nahida/cron";
import type { CompactionMetrics, LaneMetrics, Logger, QueueMetrics } from "@nahida/observability";
import { SessionEvents, type Outbox } from "@nahida/outbox";
import { every, type Periodic, type TypedQueue } from "@nahida/queue";
import { TaskLedger, localExecutor } from "@nahida/tasks";
import { createAgentLoop } from "./agent/agent-loop";
import type { LlmClient } from "./agent/llm.client";
import type { CommandContext, CommandDefinition, ToolDefinition } from "@nahida/plugin-sdk";
import { ToolRegistry } from "./agent/tool-registry";
import { CommandRouter } from "./commands/command-router";
import { defaultCompactionSettings } from "./compaction/compaction-plan";
import { createCompactor } from "./compaction/compactor";
import { estimateTools } from "./compaction/token-estimate";
import { createContextBuilder } from "./context/context-builder";
import { createEnvelopeRenderer } from "./context/envelope";
import { createAgentCaller } from "./run/agent-call";
import { LaneKinds, builtinLaneKinds, type LaneKind } from "./run/kinds";
import { createRunHandler } from "./run/run-handler";
import { ScopeReader } from "./run/run-scope";
import type { SubagentLimits } from "./run/tool-outbox";

export interface AgentWorkerOptions {
  db: Pick<Database, "prisma" | "pool" | "statements">;
  repositories: Pick<Repositories, "inbound" | "sessions" | "turns" | "cron" | "events" | "runs" | "tasks" | "compactions">;
  /** Replies and tools' sends go through it. */
  outbox: Outbox;
  /** Checks the cron jobs the agent's tools and `/cron` create and edit. */
  cronJobs: CronJobs;
  /** The loop guard: the longest chain of agent events between sessions (default 5). */
  maxEventDepth?: number;
  /** Sub-agent limits (docs/subagents.md); `maxRunning` must be the same on every replica. Defaults: 5 children a run, 8 running, 900 s. */
  subagents?: Partial<SubagentLimits> & { maxRunning?: number; sweepMs?: number; ledger?: TaskLedger };
  clock: Clock;
  /** Non-blocking Redis for producers, flags and publishing. */
  redis: Redis | Cluster;
  /** Creates blocking / subscriber connections this service owns. */
  createConnection: (purpose: string) => Redis | Cluster;
  prefix: string;
  queues: { lanes: TypedQueue<"lanes">; outbound: TypedQueue<"outbound"> };
  workerId: string;
  /** Null when no LLM is configured. */
  llm: LlmClient | null;
  workspaceDir?: string;
  timeZone: string;
  maxIterations: number;
  historyTurns: number;
  /** The model's context window and the share of it a prompt may reach before it is compacted (docs/compaction.md). */
  context?: { windowTokens: number; threshold: number };
  commandTimeoutMs: number;
  concurrency: number;
  /** Lane lease, job locks and sweeps, all from one lease (`recoveryTimings`). */
  timings: RecoveryTimings;
  /** Every tool the model may call: the plugins' (the core plugin's built-ins among them). */
  tools: readonly ToolDefinition[];
  /** Every chat command: the plugins'. */
  commands: readonly CommandDefinition<CommandContext>[];
  /** Lane item kinds beyond the built-in ones (a deployment's own; docs/run.md). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind has its own row type
  laneKinds?: LaneKind<any>[];
  /** On stop, how long running runs may finish before they are handed back to other workers. */
  shutdownGraceMs: number;
  logger: Logger;
  /** Lane runs, wait and handler times of the `lanes` queue, compactions. */
  metrics?: { lanes: LaneMetrics; queue: QueueMetrics; compaction?: CompactionMetrics };
  /** Continues the traces of `lanes` jobs (`createQueueTelemetry`); none when tracing is off. */
  telemetry?: Telemetry;
}

export interface RunningAgentWorker {
  lanes: LaneRuntime;
  /** Ready while its consumer of lane wake-ups runs. */
  readiness(): Readiness;
  stop(): Promise<void>;
}

const MAX_ATTEMPTS = 3;
const DEFAULT_MAX_EVENT_DEPTH = 5;
const SUBAGENT_DEFAULTS = { maxChildren: 5, maxRunning: 8, timeoutMs: 900_000, forkChars: 12_000, forkTurns: 60 };

export async function startAgentWorker(o: AgentWorkerOptions): Promise<RunningAgentWorker> {
  const logger = o.logger;
  const { inbound, sessions, turns, cron, events, runs, tasks, compactions } = o.repositories;
  const subagents = { ...SUBAGENT_DEFAULTS, ...o.subagents };
  const ledger =
    o.subagents?.ledger ??
    new TaskLedger({
      db: o.db,
      tasks,
      executor: localExecutor({ redis: o.redis, prefix: o.prefix }),
      maxRunning: subagents.maxRunning,
      wake: (laneKey) => wakeLane(o.queues.lanes, laneKey),
    });
  const laneStore = new LaneStore(o.db);
  const sessionEvents = new SessionEvents({
    events,
    sessions,
    turns,
    appendToLane: (laneKey, item, tx) => laneStore.append(laneKey, item, tx),
    wake: (laneKey) => wakeLane(o.queues.lanes, laneKey),
    transaction: (fn) => o.db.prisma.$transaction(fn),
  });
  const owned: (Redis | Cluster)[] = [];
  const connection = (purpose: string) => {
    const redis = o.createConnection(purpose);
    owned.push(redis);
    return redis;
  };

  const tools = new ToolRegistry().register(...o.tools);
  const commands = new CommandRouter<CommandContext>({ timeoutMs: o.commandTimeoutMs }).register(...o.commands);
  const model = o.llm?.model ?? null;
  const contextBuilder = createContextBuilder({
    envelope: createEnvelopeRenderer({ timeZone: o.timeZone }),
    ...(o.workspaceDir ? { workspaceDir: o.workspaceDir } : {}),
    onUnreadableTurn: (turn, reason) => logger.error({ turnId: turn.id, role: turn.role, reason }, "a stored turn cannot be read; left out of the context"),
  });
  const compactor = o.llm
    ? createCompactor({
        llm: o.llm,
        contextBuilder,
        settings: defaultCompactionSettings({ ...(o.context ?? { windowTokens: 128_000, threshold: 0.8 }), maxTurns: o.historyTurns }),
        toolsTokens: estimateTools(tools.specs()),
        redis: o.redis,
        prefix: o.prefix,
        ...(o.metrics?.compaction ? { metrics: o.metrics.compaction } : {}),
      })
    : undefined;
  const kinds = new LaneKinds().register(
    ...builtinLaneKinds({ inbound, cron, events, sessions, tasks, commands, cronJobs: o.cronJobs, redis: o.redis, prefix: o.prefix, model, ...(compactor ? { compactor } : {}) }),
    ...(o.laneKinds ?? []),
  );
  const handler = createRunHandler({
    kinds,
    scopes: new ScopeReader({ runs, sessions, historyTurns: o.historyTurns }),
    agent: createAgentCaller({
      runAgent: o.llm ? createAgentLoop({ llm: o.llm, tools, maxIterations: o.maxIterations }) : null,
      contextBuilder,
      outbound: o.queues.outbound,
      redis: o.redis,
      prefix: o.prefix,
      maxAttempts: MAX_ATTEMPTS,
      outbox: o.outbox,
      cronJobs: o.cronJobs,
      sessionEvents,
      subagents: { ...subagents, ledger },
      maxEventDepth: o.maxEventDepth ?? DEFAULT_MAX_EVENT_DEPTH,
      ...(compactor ? { compactor } : {}),
    }),
    effects: { outbox: o.outbox, sessions, turns, events, sessionEvents, cron, cronJobs: o.cronJobs, lanes: laneStore, ledger, compactions },
    turns,
    compactions,
    historyTurns: o.historyTurns,
    clock: o.clock,
    logger,
  });

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
    handler,
  });

  // `/stop` and a newer message in `interrupt` mode reach whichever worker runs the lane
  // (the ingress publishes them, libs/ingress); so does a sub-agent's stop or timeout.
  const subscriber = connection("lanes-abort");
  const [interrupts, supersedes] = [laneInterruptChannel(o.prefix), laneSupersedeChannel(o.prefix)];
  await subscriber.subscribe(interrupts, supersedes);
  subscriber.on("message", (channel: string, message: string) => {
    if (channel === interrupts && lanes.abortRun(message)) logger.info({ laneKey: message }, "run stopped by /stop");
    const superseded = channel === supersedes ? readSupersede(message) : null;
    if (superseded && lanes.supersedeRun(superseded.laneKey, superseded.seq)) logger.info({ laneKey: superseded.laneKey }, "run superseded by a newer message");
  });
  lanes.start();
  // Every replica sweeps: each write is conditional, so a task ends once whoever sweeps it.
  const taskSweep: Periodic = every(subagents.sweepMs ?? o.timings.laneSweepMs, async () => {
    const swept = await ledger.sweep();
    if (swept.timedOut + swept.lost + swept.orphaned > 0) logger.warn(swept, "sub-agent tasks ended by the sweep");
  }, (error) => logger.warn({ err: (error as Error).message }, "sub-agent sweep failed"));

  return {
    lanes,
    readiness: () => lanes.readiness(),
    async stop() {
      taskSweep.stop();
      await lanes.close();
      for (const redis of owned) redis.disconnect();
    },
  };
}
