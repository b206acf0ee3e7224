import { DelayedError, type Job } from "bullmq";
import { OutboundMessage, parseChatAddress, type Clock, type RecoveryTimings } from "@nahida/contracts";
import { isOutage, type DeliveryRepository } from "@nahida/db";
import { secondsSince, type DeliveryMetricOutcome, type DeliveryMetrics, type Logger } from "@nahida/observability";
import { PermanentJobError } from "@nahida/queue";
import { ChannelSendError, type ChannelRegistry } from "@nahida/channels";

export interface DeliverMessageOptions {
  deliveries: DeliveryRepository;
  registry: ChannelRegistry;
  clock: Clock;
  /** `sendingTakeoverMs`, `recordRetryMs`, `renewEveryMs`. */
  timings: Pick<RecoveryTimings, "sendingTakeoverMs" | "recordRetryMs" | "renewEveryMs">;
  logger: Logger;
  /**
   * How long a delivery waits, from its creation, while its platform is unavailable (a
   * transient failure with `details.unavailable`: a Milky account logged out); past it the
   * row fails, also when parts of it are out already. Default {@link DEFAULT_UNAVAILABLE_MAX_WAIT_MS}.
   */
  unavailableMaxWaitMs?: number;
  /** Outcomes by channel, send latency and 429s. */
  metrics?: DeliveryMetrics;
}

/** One hour, the default delivery TTL: an unsent answer expires then, a half-sent one fails (the chat is held meanwhile). */
export const DEFAULT_UNAVAILABLE_MAX_WAIT_MS = 60 * 60_000;

export type DeliverOutcome = "sent" | "already_done" | "expired" | "failed";

/** How long a delivery waits before looking again for earlier ones to the same chat. */
const ORDER_WAIT_MS = 250;

/** Puts the job back for `ms` without using an attempt (BullMQ's DelayedError protocol). */
async function delayJob(job: Job, token: string, ms: number): Promise<never> {
  // BullMQ compares this with its own wall clock, so it is not the injected Clock.
  await job.moveToDelayed(Date.now() + ms, token);
  throw new DelayedError();
}

/**
 * `outbound/delivery.send`: sends one Delivery row through its channel.
 * - already sent/failed/expired: no-op (a duplicate job);
 * - past its TTL while still unsent: expired;
 * - 429: that chat is blocked for `retry_after` and this job is delayed until then, without
 *   using an attempt or holding a worker slot; other chats go on;
 * - 5xx / network: retried with the catalog's exponential backoff (a `retry_after` on a
 *   5xx does not change that);
 * - an unknown outcome: the part is listed as uncertain first (docs/reliability.md);
 * - the platform unavailable (`details.unavailable`: a Milky account logged out): waits
 *   `retry_after` between tries like a 429, with the platform's reason as the row's status,
 *   and fails once the row is `unavailableMaxWaitMs` old;
 * - other 4xx: failed for good with the platform's description.
 * Parts accepted before a failure are recorded, so a retry continues after them. Messages
 * to one chat go out one at a time, oldest first. A row taken over from a worker that died
 * mid-send follows its policy for the part in flight (docs/reliability.md).
 */
export function createDeliverMessageHandler(o: DeliverMessageOptions) {
  const maxRecordWaitMs = Math.max(100, Math.floor(o.timings.recordRetryMs / 10));
  /**
   * Records what the platform accepted (a part, or the whole send), retrying through a
   * database outage for as long as it lasts: the platform has the message, so failing the
   * send here would make its retry send the part again (the writes are fenced on the claim,
   * so a late one after a takeover changes nothing). Any other error is retried for
   * `recordRetryMs`; then the row stays `sending`, and its takeover treats the part as one
   * of unknown outcome.
   */
  async function throughOutage<T>(deliveryId: string, what: string, write: () => Promise<T>): Promise<T> {
    const deadline = o.clock.now().getTime() + o.timings.recordRetryMs;
    for (let waitMs = 100; ; waitMs = Math.min(waitMs * 2, maxRecordWaitMs)) {
      try {
        return await write();
      } catch (error) {
        if (!isOutage(error) && o.clock.now().getTime() + waitMs > deadline) throw error;
        o.logger.warn({ deliveryId, err: (error as Error).message }, `could not record ${what} yet; retrying`);
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
  }

  const count = (channel: string, outcome: DeliveryMetricOutcome) => o.metrics?.deliveries.inc({ channel, outcome });

  /** Marks the row failed with `reason` and ends the job without retries. */
  async function failForGood(deliveryId: string, channel: string, reason: string, attempt?: number): Promise<never> {
    await o.deliveries.markFailed(deliveryId, reason, attempt);
    count(channel, "failed");
    throw new PermanentJobError(reason);
  }

  return async function deliver({ deliveryId }: { deliveryId: string }, job: Job, token: string | undefined): Promise<DeliverOutcome> {
    const started = await o.deliveries.claim(deliveryId, o.timings.sendingTakeoverMs);
    switch (started.kind) {
      case "missing":
        throw new PermanentJobError(`delivery ${deliveryId} does not exist`);
      case "done":
        return "already_done";
      case "expired":
        count(channelOf(started.target), "expired");
        return "expired";
      case "wait":
        // Keep a chat's messages in order, and a rate-limited chat quiet: look again later
        // without using an attempt.
        if (!token) throw new Error("delivery waits for an earlier one to its chat");
        return delayJob(job, token, Math.max(ORDER_WAIT_MS, started.waitMs));
      case "busy":
        // Another worker is sending it (a stalled job re-run while the first still works):
        // look again when it would have been silent long enough to take over, without
        // using an attempt.
        if (!token) throw new Error("delivery is being sent by another worker");
        return delayJob(job, token, Math.max(ORDER_WAIT_MS, started.waitMs));
    }
    const { attempt } = started;
    const row = { target: started.target, policy: started.policy };
    const address = parseChatAddress(started.target);
    const message = OutboundMessage.safeParse(started.message);
    if (!address.ok) return failForGood(deliveryId, UNKNOWN_CHANNEL, address.error.message, attempt);
    const sender = o.registry.get(address.value.channel);
    // Only a registered channel's name is a label: a stored target cannot grow the series.
    const channel = sender ? address.value.channel : UNKNOWN_CHANNEL;
    if (!message.success) return failForGood(deliveryId, channel, `stored message is invalid: ${message.error.message}`, attempt);
    if (!sender) return failForGood(deliveryId, channel, `no channel ${JSON.stringify(address.value.channel)} is registered`, attempt);

    if (started.uncertainPart !== null) {
      o.logger.warn(
        { deliveryId, target: row.target, part: started.uncertainPart, policy: row.policy },
        row.policy === "at_most_once"
          ? "taken-over delivery: a part's outcome is unknown; it is not sent again (at_most_once)"
          : "taken-over delivery: a part's outcome is unknown; it is sent again (at_least_once)",
      );
    }
    // A slow platform call (a large upload) keeps the claim alive, so the row is never
    // taken over from a live worker; a lost claim stops the send at the next part.
    let claimLost = false;
    const heartbeat = setInterval(() => {
      o.deliveries.touch(deliveryId, attempt).then(
        (held) => (claimLost ||= !held),
        () => undefined,
      );
    }, o.timings.renewEveryMs);
    let finished = false;
    const sendStarted = performance.now();
    try {
      await sender.send(address.value, message.data, {
        deliveryId,
        sentParts: started.sentParts,
        recordPart: async (index, platformMessageId, last) => {
          const recorded = await throughOutage(deliveryId, `accepted part ${index}`, () =>
            o.deliveries.recordPart(deliveryId, attempt, index, platformMessageId, last),
          ).catch((error: unknown) => {
            throw new UnrecordedPartError(index, error);
          });
          // (A touch that lands after the last part finished the row reads as lost: ignore it.)
          if (!recorded || (claimLost && !last)) throw new ClaimLostError(index);
          finished = last;
        },
      });
      o.metrics?.sendDurationSeconds.observe({ channel, outcome: "ok" }, secondsSince(sendStarted));
    } catch (error) {
      o.metrics?.sendDurationSeconds.observe({ channel, outcome: "error" }, secondsSince(sendStarted));
      // The platform accepted a part the ledger could not take: the row stays `sending`, so
      // the retry that takes it over treats that part as one of unknown outcome (the policy
      // decides) instead of resending it as if it had failed.
      if (error instanceof UnrecordedPartError) {
        o.logger.error({ deliveryId, part: error.index, err: (error.cause as Error).message }, "could not record an accepted part; the send is taken over later");
        throw error;
      }
      // Another worker took the row over (this one was cut off too long): it owns the rest.
      if (error instanceof ClaimLostError) {
        o.logger.warn({ deliveryId, part: error.index }, "delivery was taken over by another worker; this one stops");
        return "already_done";
      }
      // Not the platform's answer (a bug): the row gets a plain reason, never internals such
      // as Prisma's invocation text; the log has the detail.
      if (!(error instanceof ChannelSendError)) o.logger.error({ deliveryId, err: (error as Error).message }, "delivery failed inside Nahida");
      const failure = error instanceof ChannelSendError ? error : new ChannelSendError("transient", "internal error while sending; it is retried");
      const context = { deliveryId, target: row.target, error_code: failure.details.error_code, description: failure.description };
      if (failure.kind === "rate_limited" && token) {
        const waitMs = Math.max(1, failure.details.retry_after ?? 1) * 1000;
        // The row holds the chat: every later delivery to it waits behind this one.
        await o.deliveries.markWaiting(deliveryId, attempt, `rate limited: retry after ${waitMs / 1000} s`, waitMs);
        o.metrics?.rateLimited.inc({ channel });
        count(channel, "waiting");
        o.logger.warn({ ...context, retry_after: failure.details.retry_after }, "delivery rate limited");
        return delayJob(job, token, waitMs);
      }
      if (failure.kind === "permanent") {
        o.logger.warn(context, "delivery failed permanently");
        return failForGood(deliveryId, channel, failure.description, attempt);
      }
      // The platform refuses every send until an operator acts (a Milky account logged
      // out): the row says why it waits, and the job comes back without using an attempt,
      // so the answer goes out once the account is back, or fails at the bound. A part that
      // may be out already is listed as uncertain first, below.
      if (failure.kind === "transient" && failure.details.unavailable && !failure.details.outcome_unknown && token) {
        const holdMs = Math.max(1, failure.details.retry_after ?? 30) * 1000;
        const maxWaitMs = o.unavailableMaxWaitMs ?? DEFAULT_UNAVAILABLE_MAX_WAIT_MS;
        const waited = await o.deliveries.markUnavailable(deliveryId, attempt, {
          waitingError: `${failure.description}; trying again every ${holdMs / 1000} s`,
          failedError: `${failure.description}; gave up after waiting ${formatDuration(maxWaitMs)} for the platform`,
          holdMs,
          maxWaitMs,
        });
        if (!waited) return "already_done";
        count(channel, waited.kind === "failed" ? "failed" : "waiting");
        if (waited.kind === "failed") {
          o.logger.warn(context, "delivery failed: the platform stayed unavailable");
          throw new PermanentJobError(failure.description);
        }
        o.logger.warn({ ...context, retry_after: failure.details.retry_after }, "delivery waits for the platform");
        return delayJob(job, token, waited.waitMs);
      }
      const attempts = job.opts.attempts ?? 1;
      const lastAttempt = job.attemptsMade + 1 >= attempts;
      if (failure.details.outcome_unknown) {
        await o.deliveries.markOutcomeUnknown(deliveryId, attempt, { status: lastAttempt ? "failed" : "queued", error: failure.description });
      } else if (lastAttempt) await o.deliveries.markFailed(deliveryId, failure.description, attempt);
      else await o.deliveries.markWaiting(deliveryId, attempt, failure.description);
      count(channel, lastAttempt ? "failed" : "waiting");
      o.logger.warn({ ...context, attempt: job.attemptsMade + 1 }, "delivery attempt failed");
      throw failure;
    } finally {
      clearInterval(heartbeat);
    }
    // Recording the last part finished it; a message with nothing (left) to send ends here.
    if (!finished) await throughOutage(deliveryId, "the finished send", () => o.deliveries.markSent(deliveryId, attempt));
    count(channel, "sent");
    return "sent";
  };
}

/** The `channel` label of a delivery whose target names no registered channel. */
const UNKNOWN_CHANNEL = "unknown";

function channelOf(target: string): string {
  const address = parseChatAddress(target);
  return address.ok ? address.value.channel : UNKNOWN_CHANNEL;
}

function formatDuration(ms: number): string {
  return ms >= 60_000 && ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`;
}

/** The platform accepted part `index` and the ledger did not take the record in time. */
class UnrecordedPartError extends Error {
  override name = "UnrecordedPartError";
  constructor(
    readonly index: number,
    cause: unknown,
  ) {
    super(`accepted part ${index} could not be recorded`, { cause });
  }
}

/** The row's claim went to another worker (this one was silent too long); it stops before part `index + 1`. */
class ClaimLostError extends Error {
  override name = "ClaimLostError";
  constructor(readonly index: number) {
    super(`the delivery was taken over after part ${index}`);
  }
}
