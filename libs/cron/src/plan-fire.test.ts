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
    ...overrides,
  });
}

describe("planFire", () => {
  it("fires a slot that is on time and waits for the next", () => {
    expect(plan({})).toEqual({ fire: { slot: at(10), catchUp: false }, passed: [], unrecorded: 0, next: at(20) });
  });

  it("is on time up to half the interval late", () => {
    expect(plan({ now: at(15) }).fire).toEqual({ slot: at(10), catchUp: false });
    expect(plan({ now: at(15.001), missed: "skip" }).fire).toBeNull();
  });

  it("after three slots down, run_once fires the latest once and records the others as skipped", () => {
    const result = plan({ now: at(37) });
    expect(result.fire).toEqual({ slot: at(30), catchUp: true });
    expect(result.passed).toEqual([
      { slot: at(10), status: "skipped" },
      { slot: at(20), status: "skipped" },
    ]);
    expect(result.next).toEqual(at(40));
  });

  it("after three slots down, skip fires none and records all three", () => {
    const result = plan({ now: at(37), missed: "skip" });
    expect(result.fire).toBeNull();
    expect(result.passed.map((p) => p.status)).toEqual(["skipped", "skipped", "skipped"]);
    expect(result.next).toEqual(at(40));
  });

  it("fires the current slot and skips the passed ones when it comes back just in time", () => {
    const result = plan({ now: at(30.5), missed: "skip" });
    expect(result.fire).toEqual({ slot: at(30), catchUp: false });
    expect(result.passed.map((p) => p.slot)).toEqual([at(10), at(20)]);
  });

  it("records slots older than the catch-up window as missed and never fires them late", () => {
    const result = plan({ now: at(100), catchupWindowMs: 25_000 });
    // 10..70 are older than 75 s: missed; 80, 90 inside the window; 100 on time.
    expect(result.fire).toEqual({ slot: at(100), catchUp: false });
    expect(result.passed.filter((p) => p.status === "missed").map((p) => p.slot)).toEqual([at(10), at(20), at(30), at(40), at(50), at(60), at(70)]);
    expect(result.passed.filter((p) => p.status === "skipped").map((p) => p.slot)).toEqual([at(80), at(90)]);
  });

  it("fires nothing when even the latest slot is older than the window", () => {
    const result = plan({ now: at(57), catchupWindowMs: 5_000 });
    expect(result.fire).toBeNull();
    expect(result.passed.every((p) => p.status === "missed")).toBe(true);
    expect(result.next).toEqual(at(60));
  });

  it("caps what it writes when far behind and jumps to the window", () => {
    const result = plan({ now: at(1_000_000), catchupWindowMs: 30_000 });
    expect(result.passed.filter((p) => p.status === "missed")).toHaveLength(PASSED_RECORD_CAP);
    expect(result.unrecorded).toBeGreaterThan(0);
    expect(result.fire).toEqual({ slot: at(1_000_000), catchUp: false });
    expect(result.next).toEqual(at(1_000_010));
  });

  it("stops at max_runs and at end_at", () => {
    expect(plan({ runsLeft: 1 })).toMatchObject({ fire: { slot: at(10) }, next: null });
    expect(plan({ runsLeft: 0 })).toMatchObject({ fire: null, next: null });
    expect(plan({ endAt: at(15) })).toMatchObject({ fire: { slot: at(10) }, next: null });
    expect(plan({ endAt: at(5) })).toMatchObject({ fire: null, next: null, passed: [] });
  });

  it("an at job fires once and then has nothing next", () => {
    const once: FirePlanInput["resolved"] = { schedule: { kind: "at", at: "2026-01-01T00:00:10Z" }, tz: "UTC", anchorAt: anchor };
    expect(plan({ resolved: once, now: at(12) })).toEqual({ fire: { slot: at(10), catchUp: false }, passed: [], unrecorded: 0, next: null });
    expect(plan({ resolved: once, now: at(200), missed: "skip" })).toEqual({ fire: null, passed: [{ slot: at(10), status: "skipped" }], unrecorded: 0, next: null });
  });

  it("measures lateness from the jittered instant", () => {
    expect(plan({ now: at(17), jitterMs: () => 3_000, missed: "skip" }).fire).toEqual({ slot: at(10), catchUp: false });
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
