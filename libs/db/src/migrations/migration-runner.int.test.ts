import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_POSTGRES_URL, dropDatabase, uniqueName } from "../../../../test/support/infra";
import { MigrationError, migrate, splitStatements } from "./migration-runner";

describe("splitStatements", () => {
  it("splits after each semicolon that ends a line, without the comments between", () => {
    const sql = "-- nahida: no-transaction\n-- why\nALTER TABLE a DROP CONSTRAINT IF EXISTS b;\n\n-- an index\nCREATE INDEX CONCURRENTLY i ON a (x)\n  WHERE y IS NOT NULL;\nDROP INDEX CONCURRENTLY IF EXISTS j; -- trailing\n";
    expect(splitStatements(sql)).toEqual(["ALTER TABLE a DROP CONSTRAINT IF EXISTS b", "CREATE INDEX CONCURRENTLY i ON a (x)\n  WHERE y IS NOT NULL", "DROP INDEX CONCURRENTLY IF EXISTS j"]);
  });
});

describe("migrate, with a migration outside a transaction (real Postgres)", () => {
  let dir: string;
  let url: string;
  let client: pg.Client;
  const write = async (name: string, sql: string) => {
    await mkdir(join(dir, name), { recursive: true });
    await writeFile(join(dir, name, "migration.sql"), sql);
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "nahida-migrations-"));
    const u = new URL(TEST_POSTGRES_URL);
    u.pathname = `/nahida_t_${uniqueName("migrations")}`;
    url = u.toString();
    // Creates the database, with nothing to apply yet.
    await migrate({ databaseUrl: url, migrationsDir: dir });
    client = new pg.Client({ connectionString: url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await dropDatabase(url);
    await rm(dir, { recursive: true, force: true });
  });

  it("builds an index concurrently and records the migration; a failure is not recorded, and the next run applies it whole", async () => {
    await write("1_table", "CREATE TABLE t (id int PRIMARY KEY, x int);\nINSERT INTO t SELECT g, g FROM generate_series(1, 100) g;\n");
    await write("2_index", "-- nahida: no-transaction\nDROP INDEX CONCURRENTLY IF EXISTS t_x_idx;\nCREATE INDEX CONCURRENTLY t_x_idx ON t (x);\n");
    expect(await migrate({ databaseUrl: url, migrationsDir: dir })).toEqual({ applied: ["1_table", "2_index"], alreadyApplied: [] });
    const index = await client.query(`SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 't_x_idx'`);
    expect(index.rows).toEqual([{ indisvalid: true }]);

    // The second statement fails; the first stays done and nothing is recorded.
    await write("3_broken", "-- nahida: no-transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS t_id_x_idx ON t (id, x);\nCREATE INDEX CONCURRENTLY t_nope_idx ON t (nope);\n");
    const failed = await migrate({ databaseUrl: url, migrationsDir: dir }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(MigrationError);
    expect((failed as MigrationError).message).toMatch(/3_broken failed \(the next start runs it again\).*nope/);
    const recorded = async () => (await client.query(`SELECT migration_name FROM _prisma_migrations ORDER BY migration_name`)).rows.map((r) => r.migration_name);
    expect(await recorded()).toEqual(["1_table", "2_index"]);

    await write("3_broken", "-- nahida: no-transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS t_id_x_idx ON t (id, x);\nCREATE INDEX CONCURRENTLY IF NOT EXISTS t_x_desc_idx ON t (x DESC);\n");
    expect(await migrate({ databaseUrl: url, migrationsDir: dir })).toEqual({ applied: ["3_broken"], alreadyApplied: ["1_table", "2_index"] });
    expect(await recorded()).toEqual(["1_table", "2_index", "3_broken"]);
  });

  it("builds concurrently while another process waits for the migration lock, without a deadlock", async () => {
    await write("4_big", "CREATE TABLE big (id int, x int);\nINSERT INTO big SELECT g, g % 1000 FROM generate_series(1, 1500000) g;\n");
    await write("5_big_index", "-- nahida: no-transaction\nDROP INDEX CONCURRENTLY IF EXISTS big_x_idx;\nCREATE INDEX CONCURRENTLY big_x_idx ON big (x);\n");
    await rm(join(dir, "3_broken"), { recursive: true, force: true });
    const first = migrate({ databaseUrl: url, migrationsDir: dir });
    // The second starts once the first is building the index.
    for (let i = 0; ; i++) {
      const building = await client.query(`SELECT 1 FROM pg_stat_activity WHERE query LIKE 'CREATE INDEX CONCURRENTLY big_x_idx%' AND state = 'active'`);
      if (building.rowCount) break;
      if (i > 600) throw new Error("the index build never started");
      await new Promise((r) => setTimeout(r, 50));
    }
    const second = migrate({ databaseUrl: url, migrationsDir: dir });
    expect((await first).applied).toEqual(expect.arrayContaining(["4_big", "5_big_index"]));
    expect((await second).applied).toEqual([]);
    const index = await client.query(`SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'big_x_idx'`);
    expect(index.rows).toEqual([{ indisvalid: true }]);
  }, 60_000);
});
