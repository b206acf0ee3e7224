import type { InboundMessageRepository } from "@nahida/db";
import type { Logger } from "@nahida/observability";
import { every, type Periodic } from "@nahida/queue";

export interface InboundSweeperOptions {
  inbound: Pick<InboundMessageRepository, "unrouted">;
  /** What the `inbound/message.received` job would have done with the message. */
  route: (job: { inboundMessageId: string }) => Promise<unknown>;
  logger: Logger;
  /** How often stored but unrouted messages are looked for. */
  intervalMs: number;
  /** A message unrouted for this long counts as lost by the queue. */
  graceMs: number;
}

/**
 * A stored message whose job was lost (Redis restart, retries exhausted during an outage) is
 * routed here instead, so nothing acknowledged to a platform is lost.
 */
export function startInboundSweeper(o: InboundSweeperOptions): Periodic {
  return every(
    o.intervalMs,
    async () => {
      for (const inboundMessageId of await o.inbound.unrouted(o.graceMs, 200)) {
        await o.route({ inboundMessageId }).catch((error) =>
          o.logger.warn({ inboundMessageId, err: (error as Error).message }, "inbound sweep could not route a message"),
        );
      }
    },
    (error) => o.logger.warn({ err: (error as Error).message }, "inbound sweep failed"),
  );
}
