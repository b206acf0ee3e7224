import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/support/infra";
import { hotStatements } from "./statements";

describe("hotStatements (real Postgres)", () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase("prepared");
  });
  afterAll(async () => t?.drop());

  it("answers after a migration changed a result column's type, on the connections that prepared it", async () => {
    await t.db.pool.query("CREATE TABLE prepared_probe (id int PRIMARY KEY, n int NOT NULL)");
    await t.db.pool.query("INSERT INTO prepared_probe VALUES (1, 41)");
    const read = () => t.db.statements.query<{ n: number | string }>("SELECT n FROM prepared_probe WHERE id = $1", [1]);
    // Prepared on every pooled connection the reads land on.
    await Promise.all(Array.from({ length: 8 }, read));
    await t.db.pool.query("ALTER TABLE prepared_probe ALTER COLUMN n TYPE bigint");
    await t.db.pool.query("UPDATE prepared_probe SET n = 42");
    const after = await Promise.all(Array.from({ length: 8 }, read));
    // bigint leaves pg as a string: the new type, read through a fresh plan.
    expect(after.map((r) => r.rows[0]!.n)).toEqual(Array(8).fill("42"));
  });

  it("prepares a statement on the connection only when told it may", async () => {
    const preparedOn = async (prepared: boolean) => {
      // One connection, so the statement and the look at the session's prepared statements share it.
      const pool = new pg.Pool({ connectionString: t.url, max: 1 });
      try {
        const statements = hotStatements(pool, { prepared });
        const { rows } = await statements.query<{ one: number }>("SELECT $1::int AS one", [1]);
        expect(rows).toEqual([{ one: 1 }]);
        return (await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_prepared_statements")).rows[0]!.n;
      } finally {
        await pool.end();
      }
    };
    expect(await preparedOn(true)).toBe(1);
    expect(await preparedOn(false)).toBe(0);
  });
});
