import type { RedisLeadership } from "./redis-leadership";

/** What the loop logs; a pino logger fits. */
export interface LeaderLoopLogger {
  info(message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface LeaderLoopOptions {
  /** One holder per key across every replica. */
  leadership: RedisLeadership;
  /** Names the singleton in log lines: "the Telegram poller", "the Milky event connection". */
  role: string;
  /**
   * The holder's work. `signal` aborts the moment the lease is lost or the loop stops; the
   * work must then end soon. Returning (or throwing) ends the term: the lease is then
   * acquired again, so a returning `lead` is called again at once while the lease holds.
   */
  lead(signal: AbortSignal): Promise<void>;
  logger: LeaderLoopLogger;
  /** Wait after `lead` threw, before the lease is tried again. Default 2 s. */
  errorDelayMs?: number;
}

/**
 * Resolves after `ms`, or as soon as `signal` aborts. The listener is removed when the
 * timer fires: a signal that lives as long as a leadership is slept on again and again.
 */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
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
}

/**
 * The one way a singleton connection (a Telegram long poll, a Milky event stream) is held
 * across replicas. Replicas that are not the holder try the lease every third of its TTL;
 * the holder renews it as often and aborts its work the moment a renewal fails. A renewal
 * that never answers (a blackholed Redis, and ioredis has no command timeout) is a failure
 * too: the holder keeps its own deadline, the start of its last successful renewal (or
 * acquisition) plus the TTL less {@link LEASE_MARGIN_FRACTION}, and aborts when it passes,
 * before the key can expire in Redis and another replica take it. A dead holder is
 * replaced within the TTL plus a third of it; a stopped one releases at once.
 */
/**
 * The part of the TTL the holder gives up before its lease can have expired in Redis: room
 * for a renewal's own latency and for timers firing late.
 */
export const LEASE_MARGIN_FRACTION = 0.2;

export class LeaderLoop {
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;
  private leading = false;

  constructor(private readonly o: LeaderLoopOptions) {}

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Ends the work and gives up the lease at once, so another replica takes over now. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    // Releases only if the lock still holds our id.
    await this.o.leadership.release().catch(() => undefined);
  }

  private async run(): Promise<void> {
    const { logger, leadership, role } = this.o;
    const stop = this.stopping.signal;
    while (!stop.aborted) {
      try {
        const acquireStartedAt = performance.now();
        if (!(await leadership.tryAcquire())) {
          await sleep(leadership.ttlMs / 3, stop);
          continue;
        }
        // Stopped while acquiring: stop() releases what was just acquired.
        if (stop.aborted) break;
        if (!this.leading) logger.info(`became ${role}`);
        this.leading = true;
        await this.hold(acquireStartedAt);
      } catch (error) {
        logger.warn({ err: (error as Error).message }, `${role} failed`);
        this.stepDown();
        await sleep(this.o.errorDelayMs ?? 2_000, stop);
      }
    }
    this.stepDown();
  }

  private stepDown(): void {
    if (this.leading) this.o.logger.info(`stopped being ${this.o.role}`);
    this.leading = false;
  }

  /** `heldSince`: when the acquisition that got the lease started (the lease runs from no earlier). */
  private async hold(heldSince: number): Promise<void> {
    const { leadership, logger, role } = this.o;
    const lost = new AbortController();
    const signal = AbortSignal.any([lost.signal, this.stopping.signal]);
    // performance.now() is monotonic: a wall-clock step must not stretch the local deadline.
    const keepMs = leadership.ttlMs * (1 - LEASE_MARGIN_FRACTION);
    let deadline: NodeJS.Timeout | undefined;
    const extendTo = (renewStartedAt: number) => {
      clearTimeout(deadline);
      deadline = setTimeout(() => lost.abort(), Math.max(0, renewStartedAt + keepMs - performance.now()));
    };
    extendTo(heldSince);
    let renewing = false;
    const renewal = setInterval(() => {
      // One renewal at a time: a hung one is covered by the deadline, not piled onto.
      if (renewing || lost.signal.aborted) return;
      renewing = true;
      const startedAt = performance.now();
      leadership
        .renew()
        .then((held) => {
          if (!held) lost.abort();
          else if (!lost.signal.aborted) extendTo(startedAt);
        })
        .catch(() => lost.abort())
        .finally(() => (renewing = false));
    }, leadership.ttlMs / 3);
    try {
      await this.o.lead(signal);
    } finally {
      clearInterval(renewal);
      clearTimeout(deadline);
      if (lost.signal.aborted) {
        logger.warn({}, `lost the lease of ${role}`);
        this.stepDown();
      }
    }
  }
}
