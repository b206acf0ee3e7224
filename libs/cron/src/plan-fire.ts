import { createHash } from "node:crypto";
import type { CronMissedPolicy } from "@nahida/contracts";
import { walkSlots, type ResolvedSchedule } from "./schedule";

/** A slot fired this late (past its jittered instant) is still on time, at most. */
const MAX_ON_TIME_MS = 60_000;
/** Passed slots written as rows per claim, per kind (missed, skipped); the rest are counted. */
export const PASSED_RECORD_CAP = 20;
/** Slots one claim fires at most: a job far behind while schedulers were up (overloaded) catches up with its latest slots, not a burst. */
export const MAX_FIRES_PER_CLAIM = 5;
/** Slots inside the catch-up window looked at, the newest; older ones count as skipped. */
const WINDOW_WALK_CAP = 1_000;
/** Slots walked at most in one plan, whatever the schedule. */
const MAX_WALK = 50_000;

/** Why a passed slot was recorded instead of fired. */
export type PassedReason = "older_than_window" | "missed_while_down" | "too_many_at_once" | "max_runs";

export const PASSED_REASON_TEXT: Record<PassedReason, string> = {
  older_than_window: "older than the catch-up window",
  missed_while_down: "due while no scheduler ran; not fired under the job's missed policy",
  too_many_at_once: `one of more than ${MAX_FIRES_PER_CLAIM} slots due at once; the latest fired`,
  max_runs: "beyond max_runs",
};

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
  /** `skipped`: inside the catch-up window, not fired; `missed`: older than the window. */
  status: "skipped" | "missed";
  reason: PassedReason;
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
 * - on time (no later than half the interval to the next slot, at most a minute): fired;
 * - older than the catch-up window (and not on time): recorded `missed`, never fired late;
 * - late while schedulers were up (they were busy): fired late, at most the latest
 *   {@link MAX_FIRES_PER_CLAIM} of a claim;
 * - due while no scheduler ran: the job's `missed` policy. `run_once` fires the latest such
 *   slot once, unless a later slot fires anyway; `skip` fires none.
 * Slots not fired are recorded with the reason.
 */
export function planFire(input: FirePlanInput): FirePlan {
  const now = input.now.getTime();
  const runAt = (slot: Date) => slot.getTime() + input.jitterMs(slot);
  const inRange = (slot: Date | null): slot is Date => slot !== null && (input.endAt === null || slot.getTime() <= input.endAt.getTime());
  const duringOutage = (slot: Date) => input.outages.some((o) => runAt(slot) > o.from.getTime() && runAt(slot) <= o.to.getTime());
  // Older than this, a slot is missed whatever its interval (on time is at most a minute).
  const surelyMissedBefore = now - Math.max(input.catchupWindowMs, MAX_ON_TIME_MS);

  let unrecorded = 0;
  const passed: PassedSlot[] = [];
  const record = (slot: Date, status: PassedSlot["status"], reason: PassedReason) => passed.push({ slot, status, reason });
  let walk = walkSlots(input.resolved, new Date(input.nextSlot.getTime() - 1));
  let slot = walk.next();
  let old = 0;
  while (inRange(slot) && runAt(slot) < surelyMissedBefore) {
    if (old < PASSED_RECORD_CAP) {
      record(slot, "missed", "older_than_window");
      old += 1;
      slot = walk.next();
      continue;
    }
    // Far behind (a scheduler down for days): count no further, jump to the window.
    unrecorded += 1;
    walk = walkSlots(input.resolved, new Date(surelyMissedBefore - 1));
    const jumped = walk.next();
    slot = jumped && jumped.getTime() > slot.getTime() ? jumped : walk.next();
  }
  // The window's slots, newest WINDOW_WALK_CAP of them: a walk that would be longer starts
  // that many intervals before now (the slots it passes over count as skipped, unwritten).
  if (inRange(slot) && runAt(slot) <= now) {
    const second = walkSlots(input.resolved, slot).next();
    const interval = second ? second.getTime() - slot.getTime() : 0;
    const from = now - WINDOW_WALK_CAP * interval;
    if (interval > 0 && from > slot.getTime()) {
      unrecorded += Math.floor((from - slot.getTime()) / interval);
      walk = walkSlots(input.resolved, new Date(from));
      slot = walk.next();
    }
  }
  let recent: Date[] = [];
  let walked = 0;
  while (inRange(slot) && runAt(slot) <= now) {
    recent.push(slot);
    if (recent.length > 2 * WINDOW_WALK_CAP) {
      unrecorded += recent.length - WINDOW_WALK_CAP;
      recent = recent.slice(-WINDOW_WALK_CAP);
    }
    slot = walk.next();
    if (++walked >= MAX_WALK) {
      // Irregular slots the estimate above did not foresee: go on from now.
      walk = walkSlots(input.resolved, input.now);
      slot = walk.next();
      break;
    }
  }
  if (recent.length > WINDOW_WALK_CAP) {
    unrecorded += recent.length - WINDOW_WALK_CAP;
    recent = recent.slice(-WINDOW_WALK_CAP);
  }
  let next = inRange(slot) ? slot : null;

  type Kind = "fire" | "down" | "missed";
  const kinds = recent.map((s, i): Kind => {
    const following = recent[i + 1] ?? slot;
    const onTimeMs = Math.min(following ? (following.getTime() - s.getTime()) / 2 : MAX_ON_TIME_MS, MAX_ON_TIME_MS);
    const late = now - runAt(s);
    if (late <= onTimeMs) return "fire";
    if (late > input.catchupWindowMs) return "missed";
    return duringOutage(s) ? "down" : "fire";
  });
  const fired = new Set<number>();
  const firing = kinds.flatMap((k, i) => (k === "fire" ? [i] : []));
  for (const i of firing.slice(-MAX_FIRES_PER_CLAIM)) fired.add(i);
  const lastDown = kinds.lastIndexOf("down");
  const catchUp = input.missed === "run_once" && lastDown >= 0 && !firing.some((i) => i > lastDown) ? lastDown : -1;
  if (catchUp >= 0) fired.add(catchUp);
  let allowed = input.runsLeft === null ? Infinity : Math.max(0, input.runsLeft);

  const fires: FirePlan["fires"] = [];
  recent.forEach((s, i) => {
    let reason: PassedReason | null = null;
    if (kinds[i] === "missed") reason = "older_than_window";
    else if (!fired.has(i)) reason = kinds[i] === "down" ? "missed_while_down" : "too_many_at_once";
    else if (allowed <= 0) reason = "max_runs";
    if (reason === null) {
      fires.push({ slot: s, catchUp: i === catchUp });
      allowed -= 1;
      return;
    }
    const status = reason === "older_than_window" ? "missed" : "skipped";
    // The newest passed slots are the ones worth a row; older ones past the cap are counted.
    if (recent.length - i <= PASSED_RECORD_CAP) record(s, status, reason);
    else unrecorded += 1;
  });
  if (input.runsLeft !== null && allowed <= 0) next = null;
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
