import { describe, expect, it } from "vitest";
import { fuzz } from "./fuzz-run";

// A small seeded run of the fuzz suite in every `npm test` (`npm run fuzz` is the large one):
// no answer ≥ 500 on any ingress or route, every well-formed message in between answered,
// the process still ready.
describe("fuzz: hostile bodies on every ingress and route", () => {
  it("never answers 5xx, stays ready, and answers every well-formed message in between", async () => {
    const report = await fuzz({ runs: 200, seed: 0x25, concurrency: 4 });
    const failures = report.targets.flatMap((t) => t.failures.map((f) => `${t.name}: ${f.label} → ${f.status} ${f.body}`));
    expect(failures).toEqual([]);
    for (const target of report.targets) expect(target.runs, target.name).toBe(200);
    expect(report.probes.answered).toBe(report.probes.sent);
    expect(report.ready).toBe(true);
  }, 240_000);
});
