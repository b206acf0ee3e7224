import { GrammyError, HttpError, type Api } from "grammy";
import type { Update } from "grammy/types";
import type { Redis } from "ioredis";
import type { Logger } from "@nahida/observability";
import type { RedisLeadership } from "@nahida/queue";
import { TELEGRAM_ALLOWED_UPDATES, logUpdateOutcome, type AcceptUpdate } from "./telegram-update.handler";

export interface TelegramPollerOptions {
  api: Api;
  /** One poller per bot token, or Telegram answers 409 to the second one. */
  leadership: RedisLeadership;
  redis: Redis;
  /** Where the next offset is kept, so a new leader resumes instead of starting over. */
  offsetKey: string;
  acceptUpdate: AcceptUpdate;
  pollTimeoutSeconds: number;
  logger: Logger;
}

/**
 * Back-off after an empty getUpdates answer that came much sooner than the long poll asked
 * for (a proxy or emulator that ignores `timeout`), which would otherwise spin: 250 ms,
 * doubling, at most 4 s. Reset by any update or by a proper long poll.
 */
const EMPTY_POLL_BACKOFF_START_MS = 250;
const EMPTY_POLL_BACKOFF_MAX_MS = 4_000;

// grammY types its signal parameter with the abort-controller polyfill; Node's is compatible.
type GrammySignal = Parameters<Api["getUpdates"]>[1];

// The listener is removed when the timer fires: the signal lives as long as the leadership,
// and the back-off sleeps on it every few seconds.
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });

/**
 * Long polling with leadership. Replicas that are not the leader wait and retry; the
 * leader polls, stores every update before confirming it (the next offset), renews its
 * lease, and aborts its poll the moment it loses the lease.
 */
export class TelegramPoller {
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;
  private leading = false;

  constructor(private readonly o: TelegramPollerOptions) {}

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.loop = this.run();
  }

  /** Stops polling and gives up the leadership at once, so another replica takes over now. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    // Releases only if the lock still holds our id.
    await this.o.leadership.release().catch(() => undefined);
  }

  private async run(): Promise<void> {
    const { logger } = this.o;
    const stop = this.stopping.signal;
    while (!stop.aborted) {
      try {
        if (!(await this.o.leadership.tryAcquire())) {
          await sleep(this.o.leadership.ttlMs / 3, stop);
          continue;
        }
        logger.info("became the Telegram poller for this bot");
        this.leading = true;
        await this.lead();
      } catch (error) {
        logger.warn({ err: (error as Error).message }, "telegram polling error");
        await sleep(2_000, stop);
      } finally {
        if (this.leading) logger.info("stopped being the Telegram poller");
        this.leading = false;
      }
    }
  }

  private async lead(): Promise<void> {
    const { api, leadership, logger } = this.o;
    const lost = new AbortController();
    const signal = AbortSignal.any([lost.signal, this.stopping.signal]);
    const renewal = setInterval(() => {
      leadership
        .renew()
        .then((held) => {
          if (!held) lost.abort();
        })
        .catch(() => lost.abort());
    }, leadership.ttlMs / 3);
    try {
      // getUpdates answers 409 while a webhook is set.
      await api.deleteWebhook({ drop_pending_updates: false }, signal as GrammySignal);
      let offset = Number((await this.o.redis.get(this.o.offsetKey)) ?? 0) || undefined;
      let pollFailures = 0;
      let emptyPollBackoffMs = 0;
      let warnedEarlyEmpty = false;
      const pollTimeoutMs = this.o.pollTimeoutSeconds * 1000;
      while (!signal.aborted) {
        let updates: Update[];
        let answeredAfterMs: number;
        try {
          const startedAt = performance.now();
          updates = await api.getUpdates(
            { offset, timeout: this.o.pollTimeoutSeconds, allowed_updates: [...TELEGRAM_ALLOWED_UPDATES] },
            signal as GrammySignal,
          );
          answeredAfterMs = performance.now() - startedAt;
          pollFailures = 0;
        } catch (error) {
          if (signal.aborted) break;
          pollFailures++;
          if (error instanceof GrammyError && error.error_code === 409) {
            logger.warn({ description: error.description }, "getUpdates conflict: another poller or a webhook is active");
          } else if (error instanceof GrammyError || error instanceof HttpError) {
            logger.warn({ err: error.message }, "getUpdates failed");
          } else {
            throw error;
          }
          await sleep(Math.min(30_000, 500 * 2 ** Math.min(pollFailures, 6)), signal);
          continue;
        }
        for (const update of updates) {
          // Stored before it is confirmed: a crash here means Telegram sends it again,
          // and the update_id dedupe keeps it single. An outage (Postgres down) throws, is
          // retried without end and confirms nothing; only an unstorable update is skipped.
          logUpdateOutcome(logger, update.update_id, await this.o.acceptUpdate(update));
          offset = update.update_id + 1;
        }
        if (updates.length > 0) await this.o.redis.set(this.o.offsetKey, String(offset));
        // With timeout 0 (short polling) every empty answer is early.
        const earlyEmpty = updates.length === 0 && (pollTimeoutMs === 0 || answeredAfterMs < pollTimeoutMs / 2);
        if (!earlyEmpty) {
          emptyPollBackoffMs = 0;
          continue;
        }
        if (!warnedEarlyEmpty) {
          warnedEarlyEmpty = true;
          logger.warn({ answeredAfterMs: Math.round(answeredAfterMs), pollTimeoutSeconds: this.o.pollTimeoutSeconds }, "getUpdates answered empty before its long-poll timeout; backing off");
        }
        emptyPollBackoffMs = Math.min(EMPTY_POLL_BACKOFF_MAX_MS, Math.max(EMPTY_POLL_BACKOFF_START_MS, emptyPollBackoffMs * 2));
        await sleep(emptyPollBackoffMs, signal);
      }
    } finally {
      clearInterval(renewal);
      if (lost.signal.aborted) logger.warn("lost the Telegram poller lease");
    }
  }
}
