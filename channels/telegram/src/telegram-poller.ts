import { GrammyError, HttpError, type Api } from "grammy";
import type { Update } from "grammy/types";
import type { Cluster, Redis } from "ioredis";
import type { Readiness } from "@nahida/contracts";
import type { Logger } from "@nahida/observability";
import { LeaderLoop, sleep, type RedisLeadership } from "@nahida/queue";
import { TELEGRAM_ALLOWED_UPDATES, logUpdateOutcome, type AcceptUpdate } from "./telegram-update.handler";

export interface TelegramPollerOptions {
  api: Api;
  /** One poller per bot token, or Telegram answers 409 to the second one. */
  leadership: RedisLeadership;
  redis: Redis | Cluster;
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

/**
 * Long polling with leadership ({@link LeaderLoop}). Replicas that are not the leader wait
 * and retry; the leader polls, stores every update before confirming it (the next offset),
 * and aborts its poll the moment it loses the lease.
 */
export class TelegramPoller {
  private readonly loop: LeaderLoop;
  private lastPollFailed = false;

  constructor(private readonly o: TelegramPollerOptions) {
    this.loop = new LeaderLoop({ leadership: o.leadership, role: "the Telegram poller for this bot", logger: o.logger, lead: (signal) => this.lead(signal) });
  }

  get isLeader(): boolean {
    return this.loop.isLeader;
  }

  start(): void {
    this.loop.start();
  }

  /**
   * The leader is ready while its last getUpdates was answered; a follower while another
   * replica holds the poller lease. Nobody holding it (a leader just died, or this replica
   * has not tried yet) is not ready: no update is taken until someone does.
   */
  async readiness(): Promise<Readiness> {
    if (this.loop.isLeader) return this.lastPollFailed ? { ok: false, reason: "getUpdates is failing" } : { ok: true };
    switch (await this.o.leadership.holder()) {
      case "other":
        return { ok: true };
      case "self":
        return { ok: false, reason: "the poller lease is ours but polling has not begun" };
      case "none":
        return { ok: false, reason: "no replica holds the Telegram poller lease" };
    }
  }

  /** Stops polling and gives up the leadership at once, so another replica takes over now. */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  private async lead(signal: AbortSignal): Promise<void> {
    const { api, logger } = this.o;
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
        this.lastPollFailed = false;
      } catch (error) {
        if (signal.aborted) break;
        pollFailures++;
        this.lastPollFailed = true;
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
  }
}
