import { DelayedError, type Job } from "bullmq";
import type { Redis } from "ioredis";
import { OutboundMessage, parseChatAddress, type Clock } from "@nahida/contracts";
import { SENDING_TAKEOVER_MS, type DeliveryRepository } from "@nahida/db";
import type { Logger } from "@nahida/observability";
import { PermanentJobError } from "@nahida/queue";
import { ChannelSendError, type ChannelRegistry } from "@nahida/channels";

/**
 * How long a part the platform accepted is retried into the ledger before the send gives up.
 * It stays below the time after which another worker may take a silent `sending` row over,
 * so two workers never work on one delivery.
 */
const RECORD_RETRY_FOR_MS = SENDING_TAKEOVER_MS - 10_000;
const RECORD_RETRY_MAX_WAIT_MS = 5_000;

export interface DeliverMessageOptions {
  deliveries: DeliveryRepository;
  registry: ChannelRegistry;
  redis: Redis;
  prefix: string;
  clock: Clock;
  logger: Logger;
}

export type DeliverOutcome = "sent" | "already_done" | "expired" | "failed";

/** How long a delivery waits before looking again for earlier ones to the same chat. */
const ORDER_WAIT_MS = 250;

/** Redis key marking a chat as rate-limited until the key expires. */
const blockedKey = (prefix: string, target: string) => `${prefix}:delivery:blocked:${target}`;

/**
 * `outbound/delivery.send`: sends one Delivery row through its channel.
 * - already sent/failed/expired: no-op (a duplicate job);
 * - past its TTL while still unsent: expired;
 * - 429: that chat is blocked for `retry_after` and this job is delayed until then, without
 *   using an attempt or holding a worker slot; other chats go on;
 * - 5xx / network: retried with the catalog's exponential backoff;
 * - other 4xx: failed for good with the platform's description.
 * Parts accepted before a failure are recorded, so a retry continues after them. Messages
 * to one chat go out one at a time, oldest first.
 */
/** Puts the job back for `ms` without using an attempt (BullMQ's DelayedError protocol). */
async function delayJob(job: Job, token: string, ms: number): Promise<never> {
  // BullMQ compares this with its own wall clock, so it is not the injected Clock.
  await job.moveToDelayed(Date.now() + ms, token);
  throw new DelayedError();
}

export function createDeliverMessageHandler(o: DeliverMessageOptions) {
  /**
   * Records what the platform accepted (a part, then the whole send), retrying through a
   * database outage: the platform has the message, so failing the send here would make its
   * retry send the part again. Only after {@link RECORD_RETRY_FOR_MS} does the failure go on (and the
   * retry may then resend it).
   */
  async function throughOutage(deliveryId: string, what: string, write: () => Promise<void>): Promise<void> {
    const deadline = o.clock.now().getTime() + RECORD_RETRY_FOR_MS;
    for (let waitMs = 100; ; waitMs = Math.min(waitMs * 2, RECORD_RETRY_MAX_WAIT_MS)) {
      try {
        return await write();
      } catch (error) {
        if (o.clock.now().getTime() + waitMs > deadline) throw error;
        o.logger.warn({ deliveryId, err: (error as Error).message }, `could not record ${what} yet; retrying`);
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
  }

  /** Marks the row failed with `reason` and ends the job without retries. */
  async function failForGood(deliveryId: string, reason: string): Promise<never> {
    await o.deliveries.markFailed(deliveryId, reason);
    throw new PermanentJobError(reason);
  }

  return async function deliver({ deliveryId }: { deliveryId: string }, job: Job, token: string | undefined): Promise<DeliverOutcome> {
    const row = await o.deliveries.get(deliveryId);
    if (!row) throw new PermanentJobError(`delivery ${deliveryId} does not exist`);
    if (row.status === "sent" || row.status === "failed" || row.status === "expired") return "already_done";
    if (row.expiresAt && row.expiresAt.getTime() < o.clock.now().getTime() && (await o.deliveries.expireIfDue(deliveryId))) return "expired";

    const blockedForMs = await o.redis.pttl(blockedKey(o.prefix, row.target));
    if (blockedForMs > 0 && token) await delayJob(job, token, blockedForMs);
    // Keep a chat's messages in order: wait (without using an attempt) for earlier ones.
    if (token && (await o.deliveries.hasEarlierPending(row))) await delayJob(job, token, ORDER_WAIT_MS);

    const address = parseChatAddress(row.target);
    const message = OutboundMessage.safeParse(row.message);
    if (!address.ok) return failForGood(deliveryId, address.error.message);
    if (!message.success) return failForGood(deliveryId, `stored message is invalid: ${message.error.message}`);
    const sender = o.registry.get(address.value.channel);
    if (!sender) return failForGood(deliveryId, `no channel ${JSON.stringify(address.value.channel)} is registered`);

    const started = await o.deliveries.begin(deliveryId);
    if (!started) {
      const now = await o.deliveries.get(deliveryId);
      if (!now || now.status !== "sending") return "already_done";
      // Another worker is sending it (a stalled job re-run while the first still works):
      // try again later; the row is taken over once that worker has been silent too long.
      throw new Error("delivery is being sent by another worker");
    }
    try {
      await sender.send(address.value, message.data, {
        sentParts: started.sentParts,
        recordPart: (index, platformMessageId) =>
          throughOutage(deliveryId, `accepted part ${index}`, () => o.deliveries.recordPart(deliveryId, index, platformMessageId)),
      });
    } catch (error) {
      // Not the platform's answer (the ledger failed, or a bug): the row gets a plain reason,
      // never internals such as Prisma's invocation text; the log has the detail.
      if (!(error instanceof ChannelSendError)) o.logger.error({ deliveryId, err: (error as Error).message }, "delivery failed inside Nahida");
      const failure = error instanceof ChannelSendError ? error : new ChannelSendError("transient", "internal error while sending; it is retried");
      const context = { deliveryId, target: row.target, error_code: failure.details.error_code, description: failure.description };
      if (failure.kind === "rate_limited" && token) {
        const waitMs = Math.max(1, failure.details.retry_after ?? 1) * 1000;
        await o.redis.set(blockedKey(o.prefix, row.target), "1", "PX", waitMs);
        await o.deliveries.markWaiting(deliveryId, `rate limited: retry after ${waitMs / 1000} s`);
        o.logger.warn({ ...context, retry_after: failure.details.retry_after }, "delivery rate limited");
        return delayJob(job, token, waitMs);
      }
      if (failure.kind === "permanent") {
        o.logger.warn(context, "delivery failed permanently");
        return failForGood(deliveryId, failure.description);
      }
      const attempts = job.opts.attempts ?? 1;
      if (job.attemptsMade + 1 >= attempts) await o.deliveries.markFailed(deliveryId, failure.description);
      else await o.deliveries.markWaiting(deliveryId, failure.description);
      o.logger.warn({ ...context, attempt: job.attemptsMade + 1 }, "delivery attempt failed");
      throw failure;
    }
    await throughOutage(deliveryId, "the finished send", () => o.deliveries.markSent(deliveryId));
    return "sent";
  };
}
