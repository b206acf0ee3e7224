import { createHash } from "node:crypto";
import type { CronMissedPolicy } from "@nahida/contracts";
import { intervalAfter, nextSlot, type ResolvedSchedule } from "./schedule";

/** A slot fired this late (past its jittered instant) is still on time, at most. */
const MAX_ON_TIME_MS = 60_000;
/** Passed slots written as rows per fire, per kind (missed, skipped); the rest are counted. */
export const PASSED_RECORD_CAP = 20;
/** Slots inside the catch-up window walked at most; beyond it the walk jumps to now. */
const WINDOW_WALK_CAP = 10_000;

/** A span in which no scheduler ran (see the scheduler's beat). */
export interface SchedulerOutage {
  from: Date;
  to: Date;
}

export interface FirePlanInput {
  resolved: ResolvedSchedule;
  /** The job's next slot that has not been fired or recorded. */
  nextSlot: Date;
  now: Date;
  missed: CronMissedPolicy;
  catchupWindowMs: number;
  /** No slot after it fires. */
  endAt: Date | null;
  /** Fires left before max_runs; null for no limit. */
  runsLeft: number | null;
  /** The job's jitter for a slot (see {@link jitterFor}); 0 without jitter. */
  jitterMs: (slot: Date) => number;
  /** Recent spans without any scheduler: a slot due in one was missed, not just late. */
  outages: readonly SchedulerOutage[];
}

export interface PassedSlot {
  slot: Date;
  /** `skipped`: inside the catch-up window, not fired by the policy; `missed`: older than the window. */
  status: "skipped" | "missed";
}

export interface FirePlan {
  /** Slots to fire now, oldest first; `catchUp` for the one `run_once` fires for slots missed while no scheduler ran. */
  fires: { slot: Date; catchUp: boolean }[];
  /** Passed slots to record, oldest first. */
  passed: PassedSlot[];
  /** Passed slots beyond the record cap: counted (at least this many), not written. */
  unrecorded: number;
  /** The next slot to wait for, or null when the job has no more (an `at`, end_at, max_runs). */
  next: Date | null;
}

/**
 * Decides what one claim of a due job does, from the job's next slot, the time and the
 * recorded scheduler outages only, so every replica and every retry of the claim decides
 * the same. For each passed slot:
 * - older than the catch-up window: recorded `missed`, never fired late;
 * - on time (no later than half the interval to the next slot, at most a minute): fired;
 * - late while schedulers were up (they were busy): fired, late;
 * - due while no scheduler ran: the job's `missed` policy. `run_once` fires the latest such
 *   slot once, unless a later slot fires anyway; `skip` fires none. Those not fired are
 *   recorded `skipped`.
 */
export function planFire(input: FirePlanInput): FirePlan {
  const now = input.now.getTime();
  const windowStart = now - input.catchupWindowMs;
  const runAt = (slot: Date) => slot.getTime() + input.jitterMs(slot);
  const inRange = (slot: Date | null): slot is Date => slot !== null && (input.endAt === null || slot.getTime() <= input.endAt.getTime());
  const duringOutage = (slot: Date) => input.outages.some((o) => runAt(slot) > o.from.getTime() && runAt(slot) <= o.to.getTime());

  let unrecorded = 0;
  const old: Date[] = [];
  let slot: Date | null = input.nextSlot;
  while (inRange(slot) && runAt(slot) < windowStart) {
    if (old.length < PASSED_RECORD_CAP) old.push(slot);
    else {
      // Far behind (a scheduler down for days): count no further, jump to the window.
      unrecorded += 1;
      const jumped: Date | null = nextSlot(input.resolved, new Date(windowStart - 1));
      if (jumped && slot.getTime() < jumped.getTime()) {
        slot = jumped;
        continue;
      }
    }
    slot = nextSlot(input.resolved, slot);
  }
  const recent: Date[] = [];
  while (inRange(slot) && runAt(slot) <= now) {
    recent.push(slot);
    if (recent.length >= WINDOW_WALK_CAP) {
      slot = nextSlot(input.resolved, input.now);
      break;
    }
    slot = nextSlot(input.resolved, slot);
  }
  let next = inRange(slot) ? slot : null;

  const fire = new Set<Date>();
  const missedWhileDown: Date[] = [];
  for (const s of recent) {
    const interval = intervalAfter(input.resolved, s);
    const onTimeMs = Math.min(interval === null ? MAX_ON_TIME_MS : interval / 2, MAX_ON_TIME_MS);
    if (now - runAt(s) > onTimeMs && duringOutage(s)) missedWhileDown.push(s);
    else fire.add(s);
  }
  const catchUp = missedWhileDown.at(-1);
  if (input.missed === "run_once" && catchUp && !recent.some((s) => fire.has(s) && s.getTime() > catchUp.getTime())) fire.add(catchUp);

  let fires = recent.filter((s) => fire.has(s)).map((s) => ({ slot: s, catchUp: s === catchUp }));
  if (input.runsLeft !== null) {
    fires = fires.slice(0, Math.max(0, input.runsLeft));
    if (input.runsLeft <= fires.length) next = null;
  }
  const fired = new Set(fires.map((f) => f.slot));
  const skipped = recent.filter((s) => !fired.has(s));
  unrecorded += Math.max(0, skipped.length - PASSED_RECORD_CAP);
  const passed: PassedSlot[] = [
    ...old.map((s) => ({ slot: s, status: "missed" as const })),
    ...skipped.slice(-PASSED_RECORD_CAP).map((s) => ({ slot: s, status: "skipped" as const })),
  ];
  return { fires, passed, unrecorded, next };
}

/**
 * The delay of a job's slot, in [0, jitterMs]: a hash of job and slot, so every replica
 * (and every retry of a claim) computes the same instant without storing it.
 */
export function jitterFor(jobId: string, jitterMs: number): (slot: Date) => number {
  if (jitterMs <= 0) return () => 0;
  return (slot) => createHash("sha256").update(`${jobId}:${slot.toISOString()}`).digest().readUInt32BE(0) % (jitterMs + 1);
}
