import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { preparePostgres } from "@nahida/launcher";
import { TEST_POSTGRES_URL, dropDatabase, uniqueName } from "../support/infra";

describe("preparePostgres", () => {
  const url = new URL(TEST_POSTGRES_URL);
  url.pathname = `/nahida_t_${uniqueName("preflight")}`;
  afterAll(async () => dropDatabase(url.toString()));

  it("rides out a server that keeps terminating its connections while it migrates, and finishes", async () => {
    const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await admin.connect();
    const database = url.pathname.slice(1);
    let purging = true;
    // Cut every connection to the new database, again and again, for the first 1.5 s.
    const purge = (async () => {
      const until = Date.now() + 1_500;
      while (purging && Date.now() < until) {
        await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [database]);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const log: string[] = [];
    try {
      await preparePostgres(url.toString(), (m) => log.push(m));
    } finally {
      purging = false;
      await purge;
      await admin.end();
    }
    const check = new pg.Client({ connectionString: url.toString() });
    await check.connect();
    const applied = await check.query("SELECT count(*)::int AS n FROM _prisma_migrations WHERE finished_at IS NOT NULL");
    await check.end();
    expect(applied.rows[0].n).toBeGreaterThan(0);
  }, 60_000);
});
