import type { DeliveryRepository } from "@nahida/db";
import type { Logger } from "@nahida/observability";
import { every, type Periodic, type TypedQueue } from "@nahida/queue";

export interface DeliverySweeperOptions {
  deliveries: Pick<DeliveryRepository, "stale">;
  queue: TypedQueue<"outbound">;
  logger: Logger;
  /** How often queued deliveries without a job are looked for. */
  intervalMs: number;
  /** A delivery waiting longer than this is re-enqueued (its job id keeps it single). */
  staleAfterMs: number;
}

/**
 * The outbox's other half: a producer that crashed between its commit and its enqueue leaves
 * a queued row with no job; a job that used up its retries during an outage leaves a failed
 * job behind a row that is still queued. Both are put back on the queue.
 */
export function startDeliverySweeper(o: DeliverySweeperOptions): Periodic {
  return every(
    o.intervalMs,
    async () => {
      for (const deliveryId of await o.deliveries.stale(o.staleAfterMs, 500)) {
        await o.queue.addOrRevive("delivery.send", { deliveryId }, deliveryId);
      }
    },
    (error) => o.logger.warn({ err: (error as Error).message }, "delivery sweep failed"),
  );
}
