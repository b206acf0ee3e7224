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
 * the holder renews it as often and aborts its work the moment a renewal fails, so two
 * replicas never hold the connection for longer than one renewal round. A dead holder is
 * replaced within the TTL plus a third of it; a stopped one releases at once.
 */
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
        if (!(await leadership.tryAcquire())) {
          await sleep(leadership.ttlMs / 3, stop);
          continue;
        }
        if (!this.leading) logger.info(`became ${role}`);
        this.leading = true;
        await this.hold();
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

  private async hold(): Promise<void> {
    const { leadership, logger, role } = this.o;
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
      await this.o.lead(signal);
    } finally {
      clearInterval(renewal);
      if (lost.signal.aborted) {
        logger.warn({}, `lost the lease of ${role}`);
        this.stepDown();
      }
    }
  }
}
