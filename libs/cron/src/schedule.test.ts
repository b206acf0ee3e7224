import { describe, expect, it } from "vitest";
import type { CronSchedule } from "@nahida/contracts";
import { checkSchedule, nextSlot, type ResolvedSchedule } from "./schedule";

const berlin = (expr: string): ResolvedSchedule => ({ schedule: { kind: "cron", expr }, tz: "Europe/Berlin", anchorAt: new Date(0) });

/** Every slot in [from, to), walked the way the scheduler walks them: each from the last. */
function slots(resolved: ResolvedSchedule, from: string, to: string): string[] {
  const out: string[] = [];
  let at: Date | null = nextSlot(resolved, new Date(from));
  while (at && at.getTime() < new Date(to).getTime()) {
    out.push(at.toISOString());
    at = nextSlot(resolved, at);
  }
  return out;
}

describe("nextSlot", () => {
  it("fires 30 2 * * * in Europe/Berlin once on the spring-forward day, at 03:30 CEST", () => {
    // 2026-03-29: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist that day.
    expect(slots(berlin("30 2 * * *"), "2026-03-28T00:00:00Z", "2026-03-31T00:00:00Z")).toEqual([
      "2026-03-28T01:30:00.000Z",
      "2026-03-29T01:30:00.000Z",
      "2026-03-30T00:30:00.000Z",
    ]);
  });

  it("fires 30 2 * * * in Europe/Berlin once on the fall-back day, at the first 02:30", () => {
    // 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
    expect(slots(berlin("30 2 * * *"), "2026-10-24T00:00:00Z", "2026-10-27T00:00:00Z")).toEqual([
      "2026-10-24T00:30:00.000Z",
      "2026-10-25T00:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
  });

  it("does not offer the second 02:30 of the fall-back day to a walk that starts between the two", () => {
    // A job created or edited at 02:40 CEST (00:40Z), after the first 02:30 passed.
    expect(nextSlot(berlin("30 2 * * *"), new Date("2026-10-25T00:40:00Z"))?.toISOString()).toBe("2026-10-26T01:30:00.000Z");
  });

  it("fires an hourly job in both 02:00 hours of the fall-back day: every hour is an hour", () => {
    expect(slots(berlin("0 * * * *"), "2026-10-24T23:30:00Z", "2026-10-25T02:30:00Z")).toEqual([
      "2026-10-25T00:00:00.000Z",
      "2026-10-25T01:00:00.000Z",
      "2026-10-25T02:00:00.000Z",
    ]);
  });

  it("keeps every-intervals exact across DST", () => {
    const every: ResolvedSchedule = { schedule: { kind: "every", every_ms: 3_600_000 }, tz: "Europe/Berlin", anchorAt: new Date("2026-03-29T00:15:00Z") };
    expect(slots(every, "2026-03-29T00:15:00Z", "2026-03-29T03:30:00Z")).toEqual([
      "2026-03-29T01:15:00.000Z",
      "2026-03-29T02:15:00.000Z",
      "2026-03-29T03:15:00.000Z",
    ]);
  });

  it("counts every slots from the anchor, whatever instant it is asked from", () => {
    const every: ResolvedSchedule = { schedule: { kind: "every", every_ms: 2_000 }, tz: "UTC", anchorAt: new Date("2026-01-01T00:00:00.500Z") };
    expect(nextSlot(every, new Date("2026-01-01T00:00:03.000Z"))?.toISOString()).toBe("2026-01-01T00:00:04.500Z");
    expect(nextSlot(every, new Date("2026-01-01T00:00:04.500Z"))?.toISOString()).toBe("2026-01-01T00:00:06.500Z");
    expect(nextSlot(every, new Date("2025-12-31T00:00:00Z"))?.toISOString()).toBe("2026-01-01T00:00:02.500Z");
  });

  it("reads an at without offset in the job's zone, and has nothing after it", () => {
    const at: ResolvedSchedule = { schedule: { kind: "at", at: "2026-07-01T09:00:00" }, tz: "Europe/Berlin", anchorAt: new Date(0) };
    expect(nextSlot(at, new Date("2026-01-01T00:00:00Z"))?.toISOString()).toBe("2026-07-01T07:00:00.000Z");
    expect(nextSlot(at, new Date("2026-07-01T07:00:00Z"))).toBeNull();
    const withOffset: ResolvedSchedule = { schedule: { kind: "at", at: "2026-07-01T09:00:00+00:00" }, tz: "Europe/Berlin", anchorAt: new Date(0) };
    expect(nextSlot(withOffset, new Date("2026-01-01T00:00:00Z"))?.toISOString()).toBe("2026-07-01T09:00:00.000Z");
  });

  it("has no next slot for an expression no date satisfies", () => {
    expect(nextSlot(berlin("0 0 30 2 *"), new Date("2026-01-01T00:00:00Z"))).toBeNull();
  });
});

describe("checkSchedule", () => {
  const options = { defaultTz: "UTC", now: new Date("2026-06-01T12:00:00Z"), minIntervalMs: 60_000 };
  const check = (schedule: CronSchedule) => checkSchedule(schedule, options);

  it("accepts 5- and 6-field expressions and returns the first slot in the default zone", () => {
    expect(check({ kind: "cron", expr: "0 9 * * *" })).toEqual({ ok: true, value: { tz: "UTC", firstSlot: new Date("2026-06-02T09:00:00Z"), shortestIntervalMs: 86_400_000 } });
    expect(check({ kind: "cron", expr: "0 */5 * * * *" }).ok).toBe(true);
    expect(check({ kind: "cron", expr: "0 9 * * *", tz: "Asia/Shanghai" })).toEqual({ ok: true, value: { tz: "Asia/Shanghai", firstSlot: new Date("2026-06-02T01:00:00Z"), shortestIntervalMs: 86_400_000 } });
  });

  it.each([
    [{ kind: "cron", expr: "61 * * * *" }, "schedule.expr", /invalid cron expression/],
    [{ kind: "cron", expr: "* * *" }, "schedule.expr", /5 fields .* or 6/],
    [{ kind: "cron", expr: "* * * * *", tz: "Mars/Olympus" }, "schedule.tz", /unknown time zone "Mars\/Olympus"/],
    [{ kind: "cron", expr: "*/10 * * * * *" }, "schedule.expr", /more often than every 60000 ms/],
    [{ kind: "every", every_ms: 59_999 }, "schedule.every_ms", /at least 60000 ms/],
    [{ kind: "at", at: "2026-05-31T12:00:00Z" }, "schedule.at", /in the past/],
    [{ kind: "at", at: "next tuesday" }, "schedule.at", /not an ISO 8601/],
    [{ kind: "at", at: "+275760-09-13T00:00:00Z" }, "schedule.at", /not an ISO 8601|at most 100 years ahead/],
    [{ kind: "at", at: "2400-01-01T00:00:00Z" }, "schedule.at", /at most 100 years ahead/],
  ] as [CronSchedule, string, RegExp][])("refuses %j, naming %s", (schedule, field, message) => {
    const result = check(schedule);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.field).toBe(field);
    expect(result.error.message).toMatch(message);
  });
});
