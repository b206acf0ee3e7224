import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** Seconds; from a few milliseconds (a Redis hop) to a minute (a slow run). */
const SHORT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Seconds; LLM calls and lane runs take seconds to minutes. */
const LONG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320];

/** Filled by `createConsumer` for every queue. */
export interface QueueMetrics {
  /** From when a job could first run (added, plus its delay) to its first start. */
  jobWaitSeconds: Histogram<"queue">;
  /** One handler call; `outcome` completed | failed | delayed (put back without using an attempt). */
  jobDurationSeconds: Histogram<"queue" | "outcome">;
}

export type LaneRunOutcome = "completed" | "failed" | "outage" | "handed_back" | "lease_lost";

export interface LaneMetrics {
  runs: Counter<"outcome">;
  runDurationSeconds: Histogram<"outcome">;
}

export interface LlmMetrics {
  /** `outcome` ok | error. */
  calls: Counter<"model" | "outcome">;
  /** `direction` in (prompt) | out (completion), as the provider reports usage. */
  tokens: Counter<"model" | "direction">;
  durationSeconds: Histogram<"model" | "outcome">;
}

export type DeliveryMetricOutcome = "sent" | "failed" | "expired" | "waiting";

export interface DeliveryMetrics {
  deliveries: Counter<"channel" | "outcome">;
  /** One `ChannelSender.send`, every part of the message; `outcome` ok | error. */
  sendDurationSeconds: Histogram<"channel" | "outcome">;
  rateLimited: Counter<"channel">;
}

export interface InboundMetrics {
  /** `outcome` stored | duplicate | ignored | quarantined (`IntakeOutcome.kind`). */
  events: Counter<"channel" | "outcome">;
}

export interface CronMetrics {
  /** `outcome` fired | failed | passed (a slot recorded as missed or skipped, not fired). */
  fires: Counter<"kind" | "outcome">;
  /** From the slot's time to the commit that wrote its effect. */
  fireLagSeconds: Histogram<"kind">;
}

export interface JanitorMetrics {
  /** Rows deleted (or, for raw_events, emptied) by retention target. */
  pruned: Counter<"target">;
  /** How long one pass over every target took. */
  passSeconds: Histogram;
  /** When the last pass finished (Unix seconds); stands still when no replica leads it. */
  lastPass: Gauge;
  /** Passes that ended on an error (Postgres away); the next is tried a minute later. */
  errors: Counter;
}

export interface SubagentMetrics {
  /** Spawns refused, by reason (children_cap, run_lost, parent_gone). */
  spawnRefusals: Counter<"reason">;
  /** Tasks ended, by terminal status, counted by the process whose commit ended them. */
  tasksEnded: Counter<"status">;
}

export interface CompactionMetrics {
  /** `reason` threshold | overflow | command; `outcome` compacted | skipped (it would not fit) | failed (the summarizer) | backoff (a failure is recent). */
  compactions: Counter<"reason" | "outcome">;
  /** Estimated prompt tokens of a compacted session, `phase` before | after. */
  tokens: Histogram<"phase">;
  /** Prompts cut by dropping their oldest turns, because no compaction brought them under the window. */
  truncations: Counter;
}

/** Counts read at scrape time, each with one bounded query. */
export interface MetricSources {
  /** Open sub-agent tasks by status (`queued`, `running`: the children running now). */
  tasks?: () => Promise<{ status: string; count: number }[]>;
  /** Jobs per queue and state (`Queue.getJobCounts`). */
  queueJobs?: () => Promise<{ queue: string; state: string; count: number }[]>;
  /** Processes consuming each queue, across the deployment (`Queue.getWorkersCount`). */
  queueWorkers?: () => Promise<{ queue: string; count: number }[]>;
  /** Open (pending or running) lane items and the creation time of the oldest. */
  openLaneItems?: () => Promise<{ count: number; oldestCreatedAt: Date | null }>;
}

export interface MetricsOptions {
  /** Current time in ms, for ages. Default `Date.now`. */
  now?: () => number;
  /** Called when a source fails at scrape time; its gauges are then left out of that scrape. */
  onSourceError?: (source: keyof MetricSources, error: Error) => void;
}

/** Every Nahida series of one process, on one registry. */
export interface NahidaMetrics {
  registry: Registry;
  queue: QueueMetrics;
  lanes: LaneMetrics;
  llm: LlmMetrics;
  delivery: DeliveryMetrics;
  inbound: InboundMetrics;
  cron: CronMetrics;
  janitor: JanitorMetrics;
  subagents: SubagentMetrics;
  compaction: CompactionMetrics;
  /** Sets what the scrape-time gauges read (the process's queues and database, once built). */
  setSources(sources: MetricSources): void;
  /** The Prometheus text exposition and its content type. */
  render(): Promise<{ contentType: string; body: string }>;
}

/** How often the event loop's delay is sampled (`nodejs_eventloop_lag_*`). */
export const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * One registry per process, created where the process is wired (the launcher) and handed to
 * what records into it. Recording is in memory; the gauges that need Redis or Postgres read
 * them only when scraped. Node's default process metrics are included (`process_*`, `nodejs_*`).
 */
export function createMetrics(options: MetricsOptions = {}): NahidaMetrics {
  const now = options.now ?? Date.now;
  const registry = new Registry();
  // The event loop's delay sampled every 100 ms rather than prom-client's 10: each sample is
  // a timer that wakes the process, 100 a second at 10 ms, which cost an idle service 3 to
  // 4 ms of CPU a second, paid again by every replica (issue 26). Node records the whole time
  // between two samples, so the `nodejs_eventloop_lag_*` percentiles read the delay plus
  // 0.1 s (README, "Metrics"); a 15 s scrape reads 150 samples.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const registers = [registry];
  let sources: MetricSources = {};
  const failed = (source: keyof MetricSources, error: unknown) => options.onSourceError?.(source, error instanceof Error ? error : new Error(String(error)));

  // A gauge per source of counts by label, read at scrape time; a failing source leaves its
  // gauge out of that scrape.
  const countsGauge = (name: string, help: string, labelNames: string[], source: "queueJobs" | "queueWorkers" | "tasks") =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      async collect() {
        this.reset();
        const read = sources[source];
        if (!read) return;
        try {
          for (const { count, ...labels } of await read()) this.set(labels, count);
        } catch (error) {
          failed(source, error);
        }
      },
    });
  countsGauge("nahida_queue_jobs", "Jobs in each BullMQ queue by state (waiting, active, delayed, failed, ...), read at scrape time", ["queue", "state"], "queueJobs");
  countsGauge(
    "nahida_queue_workers",
    "Worker connections consuming each BullMQ queue across the deployment (lanes: agent workers, outbound: delivery), read at scrape time",
    ["queue"],
    "queueWorkers",
  );
  countsGauge("nahida_subagent_tasks", "Sub-agent tasks queued (waiting for a slot) and running, read at scrape time", ["status"], "tasks");
  // Both lane gauges come from one query; the registry collects them concurrently, so the
  // second to ask shares the first's read.
  let openRead: Promise<{ count: number; oldestCreatedAt: Date | null } | undefined> | undefined;
  const readOpen = () =>
    (openRead ??= (async () => {
      if (!sources.openLaneItems) return undefined;
      try {
        return await sources.openLaneItems();
      } catch (error) {
        failed("openLaneItems", error);
        return undefined;
      }
    })().finally(() => (openRead = undefined)));
  new Gauge({
    name: "nahida_lane_open_items",
    help: "Lane items pending or running, read at scrape time",
    registers,
    async collect() {
      this.reset();
      const open = await readOpen();
      if (open) this.set(open.count);
    },
  });
  new Gauge({
    name: "nahida_lane_oldest_open_item_age_seconds",
    help: "Age of the oldest pending or running lane item (0 when none), read at scrape time",
    registers,
    async collect() {
      this.reset();
      const open = await readOpen();
      if (open) this.set(open.oldestCreatedAt ? Math.max(0, (now() - open.oldestCreatedAt.getTime()) / 1000) : 0);
    },
  });

  return {
    registry,
    queue: {
      jobWaitSeconds: new Histogram({ name: "nahida_queue_job_wait_seconds", help: "Time from when a job could run to its first start", labelNames: ["queue"], buckets: SHORT_BUCKETS, registers }),
      jobDurationSeconds: new Histogram({ name: "nahida_queue_job_duration_seconds", help: "Time a job handler took, by outcome (completed, failed, delayed)", labelNames: ["queue", "outcome"], buckets: LONG_BUCKETS, registers }),
    },
    lanes: {
      runs: new Counter({ name: "nahida_lane_runs_total", help: "Lane runs by outcome (completed, failed, outage, handed_back, lease_lost)", labelNames: ["outcome"], registers }),
      runDurationSeconds: new Histogram({ name: "nahida_lane_run_duration_seconds", help: "Time a lane run took, by outcome", labelNames: ["outcome"], buckets: LONG_BUCKETS, registers }),
    },
    llm: {
      calls: new Counter({ name: "nahida_llm_calls_total", help: "LLM chat-completion calls by model and outcome (ok, error)", labelNames: ["model", "outcome"], registers }),
      tokens: new Counter({ name: "nahida_llm_tokens_total", help: "LLM tokens by model and direction (in: prompt, out: completion, cached: the part of in the provider's prompt cache served), as reported by the provider", labelNames: ["model", "direction"], registers }),
      durationSeconds: new Histogram({ name: "nahida_llm_call_duration_seconds", help: "LLM call latency by model and outcome, SDK retries included", labelNames: ["model", "outcome"], buckets: LONG_BUCKETS, registers }),
    },
    delivery: {
      deliveries: new Counter({ name: "nahida_deliveries_total", help: "Delivery attempts by channel and outcome (sent, failed, expired, waiting)", labelNames: ["channel", "outcome"], registers }),
      sendDurationSeconds: new Histogram({ name: "nahida_delivery_send_duration_seconds", help: "Time one platform send took (all parts), by channel and outcome (ok, error)", labelNames: ["channel", "outcome"], buckets: SHORT_BUCKETS, registers }),
      rateLimited: new Counter({ name: "nahida_delivery_rate_limited_total", help: "Sends the platform answered with 429 (rate limited), by channel", labelNames: ["channel"], registers }),
    },
    inbound: {
      events: new Counter({ name: "nahida_inbound_events_total", help: "Platform events offered to the intake by channel and outcome (stored, duplicate, ignored, quarantined)", labelNames: ["channel", "outcome"], registers }),
    },
    cron: {
      fires: new Counter({ name: "nahida_cron_fires_total", help: "Cron slots by job kind and outcome (fired, failed, passed)", labelNames: ["kind", "outcome"], registers }),
      fireLagSeconds: new Histogram({ name: "nahida_cron_fire_lag_seconds", help: "Time from a cron slot to the commit that wrote its effect", labelNames: ["kind"], buckets: SHORT_BUCKETS, registers }),
    },
    janitor: {
      pruned: new Counter({ name: "nahida_janitor_pruned_rows_total", help: "Rows the retention janitor deleted (raw_events: emptied), by target", labelNames: ["target"], registers }),
      passSeconds: new Histogram({ name: "nahida_janitor_pass_seconds", help: "Time one janitor pass over every retention target took", buckets: LONG_BUCKETS, registers }),
      lastPass: new Gauge({ name: "nahida_janitor_last_pass_timestamp_seconds", help: "When the last janitor pass finished (Unix seconds)", registers }),
      errors: new Counter({ name: "nahida_janitor_errors_total", help: "Janitor passes that ended on an error", registers }),
    },
    subagents: {
      spawnRefusals: new Counter({ name: "nahida_subagent_spawn_refusals_total", help: "Sub-agent spawns refused, by reason (children_cap, run_lost, parent_gone)", labelNames: ["reason"], registers }),
      tasksEnded: new Counter({ name: "nahida_subagent_tasks_ended_total", help: "Sub-agent tasks ended, by status (succeeded, failed, timed_out, cancelled, lost)", labelNames: ["status"], registers }),
    },
    compaction: {
      compactions: new Counter({ name: "nahida_compactions_total", help: "History compactions by reason (threshold, overflow, command) and outcome (compacted, skipped, failed, backoff)", labelNames: ["reason", "outcome"], registers }),
      tokens: new Histogram({ name: "nahida_compaction_tokens", help: "Estimated prompt tokens of a compacted session, before and after", labelNames: ["phase"], buckets: [1_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 1_000_000], registers }),
      truncations: new Counter({ name: "nahida_context_truncations_total", help: "Prompts cut by dropping their oldest turns because no compaction brought them under the window", registers }),
    },
    setSources(next) {
      sources = next;
    },
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

/** Seconds elapsed since `startedMs` (`performance.now()`), for histograms. */
export function secondsSince(startedMs: number): number {
  return (performance.now() - startedMs) / 1000;
}
