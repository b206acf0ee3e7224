import { configDefaults, defineConfig } from "vitest/config";

const besideCode = ["libs/**/*.test.ts", "channels/**/*.test.ts", "plugins/**/*.test.ts", "services/**/*.test.ts", "examples/**/*.test.ts"];
/** A test beside its code that needs Postgres or Redis is named `*.int.test.ts`. */
const needsInfrastructure = "**/*.int.test.ts";

export default defineConfig({
  test: {
    // Each file gets its own database and queue prefix (test/support), so files run in parallel.
    pool: "forks",
    // Two cores here, and Postgres allows 100 connections: keep the fan-out modest.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ["default"],
    // `npm test` runs all three; `npm run test:unit` (seconds, no Postgres or Redis) alone.
    projects: [
      {
        extends: true,
        test: { name: "unit", include: [...besideCode, "test/fakes/**/*.test.ts"], exclude: [...configDefaults.exclude, needsInfrastructure] },
      },
      {
        extends: true,
        // Real Postgres and Redis in this process.
        test: {
          name: "integration",
          include: [needsInfrastructure, "test/{db,gateway,delivery,scheduler,observability,launcher}/**/*.test.ts"],
          exclude: [...configDefaults.exclude],
        },
      },
      {
        extends: true,
        // Whole pipelines, several processes, SIGKILLs and outages.
        test: { name: "e2e", include: ["test/{e2e,faults,cli,lanes,fuzz,deploy}/**/*.test.ts"] },
      },
    ],
  },
});
