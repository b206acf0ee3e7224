/**
 * Where handlers get the time, so tests (and the scheduler's DST cases) can set it. Timing of
 * queues, leases and Postgres `now()` stays with those systems; this is for decisions the
 * code makes itself (expiry instants, "is this fresh", timestamps it writes).
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
