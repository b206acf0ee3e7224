import { describe, expect, it } from "vitest";
import { jitterFor, PASSED_RECORD_CAP, planFire, type FirePlanInput } from "./plan-fire";

const anchor = new Date("2026-01-01T00:00:00Z");
const at = (seconds: number) => new Date(anchor.getTime() + seconds * 1000);
const every10: FirePlanInput["resolved"] = { schedule: { kind: "every", every_ms: 10_000 }, tz: "UTC", anchorAt: anchor };

function plan(overrides: Partial<FirePlanInput>) {
  return planFire({
    resolved: every10,
    nextSlot: at(10),
    now: at(10.2),
    missed: "run_once",
    catchupWindowMs: 600_000,
    endAt: null,
    runsLeft: null,
    jitterMs: () => 0,
    outages: [],
    ...overrides,
  });
}

/** No scheduler ran from `from` to `to` (seconds after the anchor). */
const down = (from: number, to: number) => [{ from: at(from), to: at(to) }];

describe("planFire", () => {
  it("fires a slot that is on time and waits for the next", () => {
    expect(plan({})).toEqual({ fires: [{ slot: at(10), catchUp: false }], passed: [], unrecorded: 0, next: at(20) });
    // A slot just late by the poll is on time even with no catch-up window at all.
    expect(plan({ now: at(10.2), catchupWindowMs: 0 }).fires).toEqual([{ slot: at(10), catchUp: false }]);
  });

  it("fires at most the latest few late slots in one claim when the schedulers were up but overloaded", () => {
    const result = plan({ now: at(95) });
    expect(result.fires.map((f) => f.slot)).toEqual([at(50), at(60), at(70), at(80), at(90)]);
    expect(result.passed).toEqual([10, 20, 30, 40].map((t) => ({ slot: at(t), status: "skipped", reason: "too_many_at_once" })));
  });

  it("fires every late slot when the schedulers were up but busy", () => {
    const result = plan({ now: at(37) });
    expect(result.fires).toEqual([
      { slot: at(10), catchUp: false },
      { slot: at(20), catchUp: false },
      { slot: at(30), catchUp: false },
    ]);
    expect(result.passed).toEqual([]);
    expect(result.next).toEqual(at(40));
  });

  it("after three slots down, run_once fires the latest once and records the others as skipped", () => {
    const result = plan({ nextSlot: at(20), now: at(47), outages: down(10.05, 47) });
    expect(result.fires).toEqual([{ slot: at(40), catchUp: true }]);
    expect(result.passed).toEqual([
      { slot: at(20), status: "skipped", reason: "missed_while_down" },
      { slot: at(30), status: "skipped", reason: "missed_while_down" },
    ]);
    expect(result.next).toEqual(at(50));
  });

  it("after three slots down, skip fires none and records all three", () => {
    const result = plan({ nextSlot: at(20), now: at(47), missed: "skip", outages: down(10.05, 47) });
    expect(result.fires).toEqual([]);
    expect(result.passed.map((p) => [p.slot, p.status])).toEqual([
      [at(20), "skipped"],
      [at(30), "skipped"],
      [at(40), "skipped"],
    ]);
    expect(result.next).toEqual(at(50));
  });

  it("a slot on time after an outage fires, and run_once adds no catch-up before it", () => {
    for (const missed of ["run_once", "skip"] as const) {
      const result = plan({ nextSlot: at(20), now: at(40.5), missed, outages: down(10.05, 40.5) });
      expect(result.fires).toEqual([{ slot: at(40), catchUp: false }]);
      expect(result.passed.map((p) => p.slot)).toEqual([at(20), at(30)]);
    }
  });

  it("is on time up to half the interval late, also right after an outage", () => {
    expect(plan({ now: at(15), missed: "skip", outages: down(0, 15) }).fires).toEqual([{ slot: at(10), catchUp: false }]);
    expect(plan({ now: at(15.001), missed: "skip", outages: down(0, 15.001) }).fires).toEqual([]);
  });

  it("records slots older than the catch-up window as missed and never fires them late", () => {
    const result = plan({ now: at(100), catchupWindowMs: 25_000, outages: down(5, 100) });
    // 10..70 are older than 75 s: missed; 80, 90 inside the window, due while down; 100 on time.
    expect(result.fires).toEqual([{ slot: at(100), catchUp: false }]);
    expect(result.passed.filter((p) => p.status === "missed").map((p) => p.slot)).toEqual([at(10), at(20), at(30), at(40), at(50), at(60), at(70)]);
    expect(result.passed.filter((p) => p.status === "skipped").map((p) => p.slot)).toEqual([at(80), at(90)]);
  });

  it("never fires a slot older than the window, even when the schedulers were up", () => {
    const result = plan({ now: at(57), catchupWindowMs: 5_000 });
    expect(result.fires).toEqual([]);
    expect(result.passed.every((p) => p.status === "missed")).toBe(true);
    expect(result.next).toEqual(at(60));
  });

  it("caps what it writes when far behind and jumps to the window", () => {
    const result = plan({ now: at(1_000_000), catchupWindowMs: 30_000, outages: down(0, 1_000_000) });
    expect(result.passed.filter((p) => p.status === "missed").length).toBeLessThanOrEqual(2 * PASSED_RECORD_CAP);
    expect(result.unrecorded).toBeGreaterThan(0);
    expect(result.fires).toEqual([{ slot: at(1_000_000), catchUp: false }]);
    expect(result.next).toEqual(at(1_000_010));
  });

  it("stops at max_runs and at end_at", () => {
    expect(plan({ runsLeft: 1 })).toMatchObject({ fires: [{ slot: at(10) }], next: null });
    expect(plan({ runsLeft: 0 })).toMatchObject({ fires: [], next: null });
    expect(plan({ runsLeft: 2, now: at(37) })).toMatchObject({ fires: [{ slot: at(10) }, { slot: at(20) }], next: null, passed: [{ slot: at(30), status: "skipped", reason: "max_runs" }] });
    expect(plan({ endAt: at(15) })).toMatchObject({ fires: [{ slot: at(10) }], next: null });
    expect(plan({ endAt: at(5) })).toMatchObject({ fires: [], next: null, passed: [] });
  });

  it("an at job fires once and then has nothing next; missed while down, it follows the policy", () => {
    const once: FirePlanInput["resolved"] = { schedule: { kind: "at", at: "2026-01-01T00:00:10Z" }, tz: "UTC", anchorAt: anchor };
    expect(plan({ resolved: once, now: at(12) })).toEqual({ fires: [{ slot: at(10), catchUp: false }], passed: [], unrecorded: 0, next: null });
    expect(plan({ resolved: once, now: at(200), missed: "skip", outages: down(0, 200) })).toEqual({ fires: [], passed: [{ slot: at(10), status: "skipped", reason: "missed_while_down" }], unrecorded: 0, next: null });
    expect(plan({ resolved: once, now: at(200), outages: down(0, 200) }).fires).toEqual([{ slot: at(10), catchUp: true }]);
  });

  it("measures lateness from the jittered instant", () => {
    expect(plan({ now: at(17), jitterMs: () => 3_000, missed: "skip", outages: down(0, 17) }).fires).toEqual([{ slot: at(10), catchUp: false }]);
  });
});

describe("jitterFor", () => {
  it("gives every replica the same delay for a slot, within bounds", () => {
    const a = jitterFor("job-1", 5_000);
    const b = jitterFor("job-1", 5_000);
    const delays = Array.from({ length: 50 }, (_, i) => a(at(i * 10)));
    expect(delays).toEqual(Array.from({ length: 50 }, (_, i) => b(at(i * 10))));
    expect(delays.every((d) => d >= 0 && d <= 5_000)).toBe(true);
    expect(new Set(delays).size).toBeGreaterThan(10);
    expect(jitterFor("job-1", 0)(at(0))).toBe(0);
  });
});

describe("planFire far behind inside a long window", () => {
  it("keeps the newest slots: the on-time one fires, and run_once's catch-up is a recent one", () => {
    const minute: FirePlanInput["resolved"] = { schedule: { kind: "every", every_ms: 60_000 }, tz: "UTC", anchorAt: anchor };
    const now = new Date(anchor.getTime() + 3 * 86_400_000 + 10_000);
    const base = { resolved: minute, nextSlot: new Date(anchor.getTime() + 60_000), now, catchupWindowMs: 7 * 86_400_000, endAt: null, runsLeft: null, jitterMs: () => 0 };
    const down = planFire({ ...base, missed: "run_once", outages: [{ from: anchor, to: now }] });
    expect(down.fires).toEqual([{ slot: new Date(anchor.getTime() + 3 * 86_400_000), catchUp: false }]);
    expect(down.unrecorded).toBeGreaterThan(4_000);
    const up = planFire({ ...base, missed: "skip", outages: [] });
    // Up but overloaded: the newest few fire, the on-time one among them.
    expect(up.fires.at(-1)!.slot).toEqual(new Date(anchor.getTime() + 3 * 86_400_000));
    expect(up.fires).toHaveLength(5);
  });

  it("is not reordered by jitter below half the interval", () => {
    const minute: FirePlanInput["resolved"] = { schedule: { kind: "every", every_ms: 60_000 }, tz: "UTC", anchorAt: anchor };
    const jitter = jitterFor("job-j", 29_999);
    let nextSlot = new Date(anchor.getTime() + 60_000);
    const fired: number[] = [];
    for (let t = 0; t < 30 * 60; t += 5) {
      const plan = planFire({ resolved: minute, nextSlot, now: new Date(anchor.getTime() + 60_000 + t * 1000), missed: "skip", catchupWindowMs: 600_000, endAt: null, runsLeft: null, jitterMs: jitter, outages: [] });
      fired.push(...plan.fires.map((f) => f.slot.getTime()));
      expect(plan.passed).toEqual([]);
      if (plan.next) nextSlot = plan.next;
    }
    expect(fired).toEqual([...fired].sort((a, b) => a - b));
    expect(new Set(fired).size).toBe(fired.length);
  });
});
