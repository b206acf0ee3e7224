import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/support/infra";
import { createDatabase, isDataError, isOutage } from "./database";

describe("isOutage", () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase("outage");
  });
  afterAll(async () => t?.drop());

  it("is true for an unreachable server, through Prisma and through pg", async () => {
    const down = createDatabase({ url: "postgresql://postgres@127.0.0.1:1/nahida_down", poolSize: 1 });
    try {
      const viaPrisma = await down.prisma.$queryRaw`SELECT 1`.catch((e: unknown) => e);
      const viaPg = await down.pool.query("SELECT 1").catch((e: unknown) => e);
      expect(isOutage(viaPrisma)).toBe(true);
      expect(isOutage(viaPg)).toBe(true);
    } finally {
      await down.close();
    }
  });

  it("is true for a terminated backend, and false for a statement's own error", async () => {
    const client = await t.db.pool.connect();
    try {
      const pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      const killed = client.query("SELECT pg_sleep(5)").catch((e: unknown) => e);
      await t.db.pool.query("SELECT pg_terminate_backend($1)", [pid]);
      expect(isOutage(await killed)).toBe(true);
    } finally {
      client.release(true);
    }
    const bad = await t.db.prisma.$queryRaw`SELECT 'x'::int`.catch((e: unknown) => e);
    expect(isDataError(bad)).toBe(true);
    expect(isOutage(bad)).toBe(false);
    expect(isOutage(new Error("always fails"))).toBe(false);
    // The LLM client's failure to connect carries the socket code deep in its causes: not ours.
    const llmDown = new Error("Connection error.", { cause: new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }) }) });
    expect(isOutage(llmDown)).toBe(false);
  });
});
