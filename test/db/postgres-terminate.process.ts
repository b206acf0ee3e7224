// A process doing what services do with the database (Prisma transactions, Prisma queries,
// raw pg queries on the pool) while the test terminates its backends again and again. It
// prints "survived" and exits 0 unless a client's error goes unhandled and crashes it.
import { createDatabase } from "@nahida/db";

const db = createDatabase({ url: process.env.DATABASE_URL!, poolSize: 8 });
let stop = false;
let failures = 0;
const loops = Array.from({ length: 12 }, async (_, i) => {
  while (!stop) {
    try {
      if (i % 3 === 0) {
        await db.prisma.$transaction(async (tx) => {
          await tx.$queryRaw`SELECT pg_sleep(0.01)`;
          await tx.$executeRaw`SELECT 1`;
        });
      } else if (i % 3 === 1) {
        await db.pool.query("SELECT pg_sleep(0.005)");
      } else {
        await db.prisma.$queryRaw`SELECT 1`;
      }
    } catch {
      failures++;
    }
  }
});
process.stdout.write("ready\n");
process.on("SIGTERM", async () => {
  stop = true;
  await Promise.all(loops);
  process.stdout.write(`survived (${failures} failed statements)\n`);
  await db.close();
  process.exit(0);
});
