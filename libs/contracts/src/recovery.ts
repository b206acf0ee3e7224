/**
 * Every recovery time of a deployment, derived from one lease (`NAHIDA_LEASE_MS`) so they
 * stay in proportion: whatever a dead or cut-off process held — a session lane, a queue
 * job, a `sending` delivery, the Telegram poller — is taken over within about 1.5 × the
 * lease. docs/reliability.md explains each bound.
 *
 * Every replica of a deployment must use the same lease: a replica with a longer one would
 * renew too rarely for the others' takeover times.
 */
export interface RecoveryTimings {
  /** The base: a holder silent this long has lost what it held. */
  leaseMs: number;
  /** How often a live holder renews a lease, a lock or a `sending` row (a third of it). */
  renewEveryMs: number;
  /** BullMQ `lockDuration`: a dead worker's job lock expires after this long. */
  jobLockMs: number;
  /** BullMQ `stalledInterval`: how often consumers look for jobs whose lock expired. */
  stalledCheckMs: number;
  /** Session lanes: the lease of a run (renewed while it runs). */
  laneLeaseMs: number;
  /** How often the lane sweeper looks for lanes with open items and no live lease. */
  laneSweepMs: number;
  /** A `sending` delivery silent this long may be taken over (its sender touches it while alive). */
  sendingTakeoverMs: number;
  /**
   * How long recording a part the platform accepted is retried on an error that is not an
   * outage (an outage is waited out however long it lasts). Past it, the send stops and
   * its takeover treats the part as one of unknown outcome.
   */
  recordRetryMs: number;
  /** A delivery queued or sending this long with no progress gets its job re-added if it was lost. */
  staleDeliveryMs: number;
  /** How often the delivery sweeper looks for such rows. */
  deliverySweepMs: number;
  /** TTL of a Redis-held leadership (the Telegram poller): a dead leader is replaced after it. */
  leadershipTtlMs: number;
}

export const DEFAULT_LEASE_MS = 10_000;

/**
 * How long an event's platform identity (a Telegram `update_id`, a Milky message seq) stays
 * a duplicate: as long as a platform redelivers (Telegram: 24 hours). Older, the same identity
 * is a new event: Telegram re-seeds `update_id` after a week without updates.
 */
export const DEFAULT_DEDUPE_WINDOW_MS = 24 * 3600_000;

export function recoveryTimings(leaseMs: number = DEFAULT_LEASE_MS): RecoveryTimings {
  if (!Number.isInteger(leaseMs) || leaseMs < 1_000) throw new RangeError(`the lease must be a whole number of milliseconds ≥ 1000, got ${leaseMs}`);
  const part = (divisor: number) => Math.max(200, Math.floor(leaseMs / divisor));
  return {
    leaseMs,
    renewEveryMs: part(3),
    jobLockMs: leaseMs,
    // A dead worker's job runs again ≤ lock + check = 1.5 × lease after its last renewal.
    stalledCheckMs: part(2),
    laneLeaseMs: leaseMs,
    // A dead worker's session is woken again ≤ lease + sweep = 1.2 × lease after its last renewal.
    laneSweepMs: part(5),
    sendingTakeoverMs: leaseMs,
    recordRetryMs: leaseMs,
    staleDeliveryMs: leaseMs,
    deliverySweepMs: part(2),
    // Followers try every third of it: takeover ≤ 1.33 × lease.
    leadershipTtlMs: leaseMs,
  };
}
