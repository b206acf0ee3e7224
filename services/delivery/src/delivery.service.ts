import { DelayedError, type Telemetry, type Worker } from "bullmq";
import type { Cluster, Redis } from "ioredis";
import type { DeliveryRepository } from "@nahida/db";
import { withSpan, type DeliveryMetrics, type Logger, type QueueMetrics } from "@nahida/observability";
import { consumerReadiness, createConsumer, type TypedQueue } from "@nahida/queue";
import { parseChatAddress, type Clock, type Readiness, type RecoveryTimings } from "@nahida/contracts";
import type { ChannelRegistry } from "@nahida/channels";
import { createDeliverMessageHandler } from "./deliver-message.worker";
import { startDeliverySweeper } from "./delivery.sweeper";

export interface DeliveryServiceOptions {
  deliveries: DeliveryRepository;
  createConnection: (purpose: string) => Redis | Cluster;
  prefix: string;
  outboundQueue: TypedQueue<"outbound">;
  registry: ChannelRegistry;
  concurrency: number;
  clock: Clock;
  /** Job lock, `sending` takeover, record retries and sweeps, all from one lease (`recoveryTimings`). */
  timings: RecoveryTimings;
  /** How long a delivery waits for an unavailable platform (a logged-out Milky account); see `createDeliverMessageHandler`. */
  unavailableMaxWaitMs?: number;
  logger: Logger;
  metrics?: { delivery: DeliveryMetrics; queue: QueueMetrics };
  /** Continues the traces of `outbound` jobs (`createQueueTelemetry`); none when tracing is off. */
  telemetry?: Telemetry;
}

export interface RunningDelivery {
  /** Ready while its consumer of the `outbound` queue runs. */
  readiness(): Readiness;
  stop(): Promise<void>;
}

export async function startDelivery(o: DeliveryServiceOptions): Promise<RunningDelivery> {
  const { deliveries } = o;
  const connection = o.createConnection("outbound-worker");
  const deliver = createDeliverMessageHandler({
    deliveries,
    registry: o.registry,
    clock: o.clock,
    timings: o.timings,
    logger: o.logger,
    ...(o.unavailableMaxWaitMs !== undefined ? { unavailableMaxWaitMs: o.unavailableMaxWaitMs } : {}),
    ...(o.metrics ? { metrics: o.metrics.delivery } : {}),
  });
  // A delay (a 429, an earlier message to the chat first) ends the span without failing it.
  const spanOptions = (deliveryId: string) => ({ attributes: { "nahida.delivery.id": deliveryId }, expected: (e: unknown) => e instanceof DelayedError });
  const worker: Worker = createConsumer(
    "outbound",
    {
      "delivery.send": (payload, job, token) =>
        withSpan("delivery.send", spanOptions(payload.deliveryId), async (span) => {
          const outcome = await deliver(payload, job, token);
          span.setAttribute("nahida.delivery.outcome", outcome);
          return outcome;
        }),
      // Best effort: a lost or failed indicator is not worth a retry or a log line above debug.
      "chat.action": async ({ target, action }) => {
        const address = parseChatAddress(target);
        if (!address.ok) return "skipped";
        const sender = o.registry.get(address.value.channel);
        await sender?.sendChatAction?.(address.value, action).catch((error) => o.logger.debug({ err: (error as Error).message }, "chat action failed"));
        return "sent";
      },
    },
    {
      connection,
      prefix: o.prefix,
      concurrency: o.concurrency,
      lockDurationMs: o.timings.jobLockMs,
      stalledIntervalMs: o.timings.stalledCheckMs,
      onFailed: (job, error) => o.logger.warn({ jobId: job?.id, job: job?.name, attemptsMade: job?.attemptsMade, err: error.message }, "outbound job failed"),
      onError: (error) => o.logger.error({ err: error.message }, "outbound worker error"),
      ...(o.metrics ? { metrics: o.metrics.queue } : {}),
      ...(o.telemetry ? { telemetry: o.telemetry } : {}),
    },
  );

  const sweep = startDeliverySweeper({
    deliveries,
    queue: o.outboundQueue,
    logger: o.logger,
    intervalMs: o.timings.deliverySweepMs,
    staleAfterMs: o.timings.staleDeliveryMs,
  });

  return {
    readiness: () => consumerReadiness(worker, "outbound"),
    async stop() {
      sweep.stop();
      await worker.close();
      connection.disconnect();
    },
  };
}
