import { createHash } from "node:crypto";
import type { CronMissedPolicy } from "@nahida/contracts";
import { intervalAfter, nextSlot, type ResolvedSchedule } from "./schedule";

/** A slot fired this late (past its jittered instant) is still on time, at most. */
const MAX_ON_TIME_MS = 60_000;
/** Passed slots written as rows per fire, per kind (missed, skipped); the rest are counted. */
export const PASSED_RECORD_CAP = 20;
/** Slots inside the catch-up window walked at most; beyond it the walk jumps to now. */
const WINDOW_WALK_CAP = 10_000;

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
}

export interface PassedSlot {
  slot: Date;
  /** `skipped`: inside the catch-up window, not fired by the policy; `missed`: older than the window. */
  status: "skipped" | "missed";
}

export interface FirePlan {
  /** The slot to fire now, if any; `catchUp` when it fires late under `run_once`. */
  fire: { slot: Date; catchUp: boolean } | null;
  /** Passed slots to record, oldest first. */
  passed: PassedSlot[];
  /** Passed slots beyond the record cap: counted, not written. */
  unrecorded: number;
  /** The next slot to wait for, or null when the job has no more (an `at`, end_at, max_runs). */
  next: Date | null;
}

/**
 * Decides what one claim of a due job does, from the job's next slot and the time only, so
 * every replica and every retry of the claim decides the same.
 *
 * The latest passed slot fires as usual when it is on time: no later than half the interval
 * to the slot after it (at most a minute) past its instant. Otherwise the slots passed while
 * no scheduler ran follow the job's policy inside the catch-up window (`run_once` fires the
 * latest of them once, `skip` none) and are recorded; slots older than the window are
 * recorded as missed and never fire.
 */
export function planFire(input: FirePlanInput): FirePlan {
  const now = input.now.getTime();
  const windowStart = now - input.catchupWindowMs;
  const runAt = (slot: Date) => slot.getTime() + input.jitterMs(slot);
  const inRange = (slot: Date | null): slot is Date => slot !== null && (input.endAt === null || slot.getTime() <= input.endAt.getTime());

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

  let fire: FirePlan["fire"] = null;
  const latest = recent.at(-1);
  if (latest && (input.runsLeft === null || input.runsLeft > 0)) {
    const interval = intervalAfter(input.resolved, latest);
    const onTimeMs = Math.min(interval === null ? MAX_ON_TIME_MS : interval / 2, MAX_ON_TIME_MS);
    if (now - runAt(latest) <= onTimeMs) fire = { slot: latest, catchUp: false };
    else if (input.missed === "run_once") fire = { slot: latest, catchUp: true };
  }
  if (input.runsLeft !== null && input.runsLeft <= (fire ? 1 : 0)) next = null;

  const skipped = recent.filter((s) => s !== fire?.slot);
  unrecorded += Math.max(0, skipped.length - PASSED_RECORD_CAP);
  const passed: PassedSlot[] = [
    ...old.map((s) => ({ slot: s, status: "missed" as const })),
    ...skipped.slice(-PASSED_RECORD_CAP).map((s) => ({ slot: s, status: "skipped" as const })),
  ];
  return { fire, passed, unrecorded, next };
}

/**
 * The delay of a job's slot, in [0, jitterMs]: a hash of job and slot, so every replica
 * (and every retry of a claim) computes the same instant without storing it.
 */
export function jitterFor(jobId: string, jitterMs: number): (slot: Date) => number {
  if (jitterMs <= 0) return () => 0;
  return (slot) => createHash("sha256").update(`${jobId}:${slot.toISOString()}`).digest().readUInt32BE(0) % (jitterMs + 1);
}
