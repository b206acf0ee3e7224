// Client CPU per statement through the three ways libs/db reaches Postgres (docs/data-access.md):
// Prisma $queryRaw, the pg pool directly, and a Prisma interactive transaction of two
// statements. One connection at a time, the same small SELECT with two parameters.
//   npm run bench:db -- [--statements 5000] [--rounds 2]
import { parseArgs } from "node:util";
import { createDatabase } from "@nahida/db";
import { TEST_POSTGRES_URL } from "../test/support/infra";

const { values: args } = parseArgs({ options: { statements: { type: "string", default: "5000" }, rounds: { type: "string", default: "2" } } });
const N = Number(args.statements);
const ROUNDS = Number(args.rounds);
const db = createDatabase({ url: TEST_POSTGRES_URL, poolSize: 1 });

async function measure(label: string, run: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 500; i++) await run(i);
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < N; i++) await run(i);
  const used = process.cpuUsage(cpu);
  const cpuPerCall = (used.user + used.system) / N;
  const wallPerCall = ((performance.now() - started) * 1000) / N;
  console.log(`  ${label.padEnd(52)} client CPU ${cpuPerCall.toFixed(0).padStart(5)} µs, wall ${wallPerCall.toFixed(0).padStart(5)} µs per call`);
}

try {
  for (let round = 1; round <= ROUNDS; round++) {
    console.log(`round ${round} of ${ROUNDS}, ${N} times each:`);
    await measure("Prisma $queryRaw", (i) => db.prisma.$queryRaw`SELECT ${i}::int AS x, ${"abc"}::text AS y, now() AS t`);
    await measure("pg pool.query", (i) => db.pool.query("SELECT $1::int AS x, $2::text AS y, now() AS t", [i, "abc"]));
    await measure("Prisma $transaction of 2 statements (+BEGIN, COMMIT)", (i) =>
      db.prisma.$transaction(async (tx) => {
        await tx.$queryRaw`SELECT ${i}::int AS x`;
        await tx.$queryRaw`SELECT ${i}::int AS x`;
      }),
    );
  }
} finally {
  await db.close();
}
