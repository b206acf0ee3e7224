import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["libs/**/*.test.ts", "channels/**/*.test.ts", "services/**/*.test.ts", "test/**/*.test.ts"],
    // Each file gets its own database and queue prefix (test/support), so files run in parallel.
    pool: "forks",
    // Two cores here, and Postgres allows 100 connections: keep the fan-out modest.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ["default"],
  },
});
