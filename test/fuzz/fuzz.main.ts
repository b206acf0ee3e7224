import { fuzz } from "./fuzz-run";

// `npm run fuzz [-- RUNS [SEED]]`: the large run of the fuzz suite (default 10,000 inputs per
// ingress and route), printing per target the status counts and the slowest inputs, the
// probes answered, readiness and RSS. Exits 1 on any answer ≥ 500, an unanswered probe, a
// process not ready, or RSS above 1.5 × its start.
const runs = Number(process.argv[2] ?? 10_000);
const seed = Number(process.argv[3] ?? 0x25);
const report = await fuzz({ runs, seed, concurrency: 8, log: (line) => console.log(line) });
console.log(`\n${runs} inputs per target, seed ${seed}`);
for (const t of report.targets) {
  console.log(`\n${t.name}: ${Object.entries(t.statuses).map(([s, n]) => `${s}×${n}`).join(" ")}`);
  for (const s of t.slowest) console.log(`  slowest ${s.ms} ms  ${s.label}`);
  for (const f of t.failures.slice(0, 10)) console.log(`  FAILURE ${f.status}  ${f.label}  ${f.body}`);
}
console.log(`\nprobes answered ${report.probes.answered}/${report.probes.sent}; ready ${report.ready}; RSS ${report.rss.startMb} MB → ${report.rss.endMb} MB; heap in use ${report.heap.startMb} MB → ${report.heap.endMb} MB`);
const failed = report.targets.some((t) => t.failures.length > 0) || report.probes.answered < report.probes.sent || !report.ready || report.rss.endMb > 1.5 * report.rss.startMb;
process.exit(failed ? 1 : 0);
