import { CronExpressionParser, type CronExpression } from "cron-parser";
import { DateTime } from "luxon";
import { err, ok, type CronSchedule, type Result } from "@nahida/contracts";

/** A schedule with what it needs to produce slots: its time zone and, for `every`, its anchor. */
export interface ResolvedSchedule {
  schedule: CronSchedule;
  /** IANA time zone the expression (or an `at` without offset) is read in. */
  tz: string;
  /** `every` slots are `anchorAt + k × every_ms`; the instant the schedule was set. */
  anchorAt: Date;
}

export interface ScheduleProblem {
  /** Dotted path of the offending field in the request (`schedule.expr`). */
  field: string;
  message: string;
}

export interface CheckScheduleOptions {
  /** Time zone of a schedule that names none. */
  defaultTz: string;
  now: Date;
  /** Slots closer together than this are refused (SCHEDULER_MIN_INTERVAL_MS). */
  minIntervalMs: number;
}

/** What a checked schedule gives its job. */
export interface CheckedSchedule {
  tz: string;
  firstSlot: Date;
  /** The shortest gap between slots seen (sampled for cron); null for a one-shot `at`. */
  shortestIntervalMs: number | null;
}

/** An `at` this far ahead or more is refused (and stays far from the end of JavaScript dates). */
const MAX_AHEAD_MS = 100 * 366 * 86_400_000;

/** Consecutive slots looked at to find a cron expression's shortest interval. */
const INTERVAL_SAMPLE = 24;
const HOUR_MS = 3_600_000;

/** True when `tz` is an IANA zone this runtime knows. */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return DateTime.local().setZone(tz).isValid;
  } catch {
    return false;
  }
}

function parseExpression(expr: string, tz: string, currentDate: Date): CronExpression {
  return CronExpressionParser.parse(expr, { currentDate, tz, strict: false });
}

/** The instant of an `at` schedule: its own offset if it has one, else read in `tz`. */
export function atInstant(at: string, tz: string): Date | null {
  const parsed = DateTime.fromISO(at, { zone: tz, setZone: false });
  return parsed.isValid ? parsed.toJSDate() : null;
}

const utcOffsetMinutes = (tz: string, at: Date) => DateTime.fromJSDate(at, { zone: tz }).offset;

/** The slots after an instant, in order, from one parse of the schedule. */
export interface SlotWalk {
  /** The next slot, or null when there is none. */
  next(): Date | null;
}

/**
 * Walks the slots strictly after `after`.
 *
 * Cron slots come from cron-parser, which handles DST the way cron does when it walks the
 * slots in order: a wall time that does not exist (spring forward) fires once, shifted by
 * the gap; one that exists twice (fall back) fires once, at its first occurrence, unless the
 * expression names every hour. Walking from an instant inside a repeated hour would offer
 * the second occurrence as if it were new, so when an offset change lies within the last
 * few hours the walk starts before it.
 */
export function walkSlots(resolved: ResolvedSchedule, after: Date): SlotWalk {
  const { schedule, tz } = resolved;
  switch (schedule.kind) {
    case "at": {
      const at = atInstant(schedule.at, schedule.tz ?? tz);
      let done = !at || at.getTime() <= after.getTime();
      return {
        next: () => {
          if (done) return null;
          done = true;
          return at;
        },
      };
    }
    case "every": {
      const anchor = resolved.anchorAt.getTime();
      let k = Math.max(Math.floor((after.getTime() - anchor) / schedule.every_ms) + 1, 1);
      return { next: () => new Date(anchor + k++ * schedule.every_ms) };
    }
    case "cron": {
      const zone = schedule.tz ?? tz;
      const lookBack = new Date(after.getTime() - 3 * HOUR_MS);
      const start = utcOffsetMinutes(zone, lookBack) === utcOffsetMinutes(zone, after) ? after : lookBack;
      let slots: CronExpression | null;
      try {
        slots = parseExpression(schedule.expr, zone, start);
      } catch {
        slots = null;
      }
      return {
        next: () => {
          try {
            for (;;) {
              if (!slots) return null;
              const next = slots.next().toDate();
              if (next.getTime() > after.getTime()) return next;
            }
          } catch {
            // An expression no date satisfies (`0 0 30 2 *`) has no next slot.
            slots = null;
            return null;
          }
        },
      };
    }
    default: {
      const unreachable: never = schedule;
      return unreachable;
    }
  }
}

/** The first slot strictly after `after`, or null when there is none (an `at` that passed). */
export function nextSlot(resolved: ResolvedSchedule, after: Date): Date | null {
  return walkSlots(resolved, after).next();
}

/** Milliseconds from `slot` to the slot after it; null for a one-shot schedule. */
export function intervalAfter(resolved: ResolvedSchedule, slot: Date): number | null {
  const next = nextSlot(resolved, slot);
  return next ? next.getTime() - slot.getTime() : null;
}

/**
 * Checks a schedule as an operator or the agent wrote it, and returns its time zone and
 * first slot. Every refusal names the field and the problem: a bad expression, an unknown
 * time zone, an `at` in the past, slots closer than the minimum interval.
 */
export function checkSchedule(schedule: CronSchedule, o: CheckScheduleOptions): Result<CheckedSchedule, ScheduleProblem> {
  const tz = (schedule.kind === "every" ? undefined : schedule.tz) ?? o.defaultTz;
  if (!isTimeZone(tz)) return err({ field: "schedule.tz", message: `unknown time zone ${JSON.stringify(tz)}; use an IANA name such as Europe/Berlin or UTC` });
  const resolved: ResolvedSchedule = { schedule, tz, anchorAt: o.now };
  switch (schedule.kind) {
    case "at": {
      const at = atInstant(schedule.at, tz);
      if (!at) return err({ field: "schedule.at", message: `${JSON.stringify(schedule.at)} is not an ISO 8601 date-time, e.g. 2026-12-24T18:00:00+01:00` });
      if (at.getTime() <= o.now.getTime()) return err({ field: "schedule.at", message: `${at.toISOString()} is in the past` });
      if (at.getTime() > o.now.getTime() + MAX_AHEAD_MS) return err({ field: "schedule.at", message: "must be at most 100 years ahead" });
      return ok({ tz, firstSlot: at, shortestIntervalMs: null });
    }
    case "every":
      if (schedule.every_ms < o.minIntervalMs) {
        return err({ field: "schedule.every_ms", message: `must be at least ${o.minIntervalMs} ms (the scheduler's minimum interval)` });
      }
      return ok({ tz, firstSlot: nextSlot(resolved, o.now)!, shortestIntervalMs: schedule.every_ms });
    case "cron": {
      const fields = schedule.expr.split(/\s+/).length;
      if (fields !== 5 && fields !== 6) {
        return err({ field: "schedule.expr", message: `a cron expression has 5 fields (minute hour day month weekday) or 6 (with leading seconds); got ${fields}` });
      }
      let slots: Date[];
      try {
        const walk = parseExpression(schedule.expr, tz, o.now);
        slots = Array.from({ length: INTERVAL_SAMPLE }, () => walk.next().toDate());
      } catch (error) {
        return err({ field: "schedule.expr", message: `invalid cron expression ${JSON.stringify(schedule.expr)}: ${(error as Error).message}` });
      }
      let shortestIntervalMs = Infinity;
      for (let i = 1; i < slots.length; i++) shortestIntervalMs = Math.min(shortestIntervalMs, slots[i]!.getTime() - slots[i - 1]!.getTime());
      if (shortestIntervalMs < o.minIntervalMs) {
        return err({ field: "schedule.expr", message: `fires more often than every ${o.minIntervalMs} ms (the scheduler's minimum interval)` });
      }
      return ok({ tz, firstSlot: nextSlot(resolved, o.now)!, shortestIntervalMs });
    }
    default: {
      const unreachable: never = schedule;
      return unreachable;
    }
  }
}
