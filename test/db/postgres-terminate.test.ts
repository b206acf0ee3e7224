import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { TEST_POSTGRES_URL, createTestDatabase, type TestDatabase } from "../support/infra";
import { spawnTsProcess } from "../support/processes";

describe("a Postgres restart is an outage, never a crash", () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase("pg_terminate");
  });
  afterAll(async () => {
    await t?.drop();
  });

  it("keeps a busy process alive while every backend of its database is terminated, again and again", async () => {
    const child = await spawnTsProcess("test/db/postgres-terminate.process.ts", { DATABASE_URL: t.url });
    const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await admin.connect();
    try {
      const database = new URL(t.url).pathname.slice(1);
      for (let round = 0; round < 20; round++) {
        await new Promise((r) => setTimeout(r, 150));
        await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [database]);
      }
    } finally {
      await admin.end();
    }
    child.kill("SIGTERM");
    expect(await child.exited, child.output()).toBe(0);
    expect(child.output()).toMatch(/survived \(\d+ failed statements\)/);
  });
});
