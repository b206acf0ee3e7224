import type { Clock } from "@nahida/contracts";
import { RETENTION_TARGETS, type RetentionRepository, type RetentionTarget } from "@nahida/db";
import type { JanitorMetrics, Logger } from "@nahida/observability";
import { LeaderLoop, sleep, type RedisLeadership } from "@nahida/queue";

const DAY_MS = 86_400_000;
const ERROR_RETRY_MS = 60_000;
/**
 * After each batch the janitor rests this many times as long as the batch took: a tenth of
 * one connection's time at most. A delete's index and WAL writes compete with the hot path
 * for the same disk and cores; at half (a rest as long as the batch) bench:ledger's paced
 * p99 grew 6.5 times during a prune. A tenth still prunes over a thousand rows a second.
 */
const REST_FACTOR = 9;

export interface JanitorOptions {
  retention: Pick<RetentionRepository, "prune">;
  /** Days each target is kept; 0 keeps it for good. */
  keepDays: Record<RetentionTarget, number>;
  /** One janitor across every scheduler replica. */
  leadership: RedisLeadership;
  clock: Clock;
  logger: Logger;
  metrics?: JanitorMetrics;
  /** Rows one statement prunes at most. */
  batchSize: number;
  /** Time between two passes. */
  intervalMs: number;
}

export interface RunningJanitor {
  stop(): Promise<void>;
}

/**
 * The retention janitor: one leader across the scheduler replicas prunes what is older than
 * its retention, target by target, in batches of `batchSize` rows. After each batch it
 * rests nine times as long as the batch took, so it holds at most a tenth of one Postgres
 * connection's time and the hot path's statements never queue behind a long delete. A pass ends when
 * every target's last batch came back short; the next starts `intervalMs` later. A new
 * leader (the old one died or stopped) starts a pass at once.
 */
export function startJanitor(o: JanitorOptions): RunningJanitor {
  const log = o.logger;

  async function pass(signal: AbortSignal): Promise<void> {
    const started = o.clock.now().getTime();
    const pruned: Partial<Record<RetentionTarget, number>> = {};
    for (const target of RETENTION_TARGETS) {
      const days = o.keepDays[target];
      if (days === 0) continue;
      const before = new Date(o.clock.now().getTime() - days * DAY_MS);
      for (;;) {
        if (signal.aborted) return;
        const t0 = performance.now();
        const count = await o.retention.prune(target, before, o.batchSize);
        if (count > 0) {
          pruned[target] = (pruned[target] ?? 0) + count;
          o.metrics?.pruned.inc({ target }, count);
        }
        if (count < o.batchSize) break;
        await sleep(REST_FACTOR * (performance.now() - t0), signal);
      }
    }
    const seconds = (o.clock.now().getTime() - started) / 1_000;
    o.metrics?.passSeconds.observe(seconds);
    o.metrics?.lastPass.set(o.clock.now().getTime() / 1_000);
    if (Object.keys(pruned).length > 0) log.info({ pruned, seconds }, "janitor: pruned what outlived its retention");
  }

  const loop = new LeaderLoop({
    leadership: o.leadership,
    role: "the retention janitor",
    logger: log,
    async lead(signal) {
      while (!signal.aborted) {
        try {
          await pass(signal);
        } catch (error) {
          // Postgres away or slow: the leader stays, and tries a pass again a minute later
          // (or at its interval) instead of every few seconds.
          o.metrics?.errors.inc();
          log.warn({ err: (error as Error).message }, "janitor: the pass failed; trying again later");
          await sleep(Math.min(ERROR_RETRY_MS, o.intervalMs), signal);
          continue;
        }
        await sleep(o.intervalMs, signal);
      }
    },
  });
  loop.start();
  return { stop: () => loop.stop() };
}
