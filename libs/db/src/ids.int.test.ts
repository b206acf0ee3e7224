import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/support/infra";
import { newRowId } from "./ids";

/** The Unix milliseconds in a UUIDv7's first 48 bits. */
const millisOf = (id: string) => parseInt(id.replace(/-/g, "").slice(0, 12), 16);
const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("row ids (real Postgres)", () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase("row_ids");
  });

  afterAll(async () => {
    await t?.drop();
  });

  it("the services' ids are UUIDv7 of now, each after the one before", () => {
    const before = Date.now();
    const ids = Array.from({ length: 1000 }, () => newRowId());
    for (const id of ids) expect(id).toMatch(V7);
    expect(ids).toEqual([...ids].sort());
    expect(new Set(ids).size).toBe(ids.length);
    expect(millisOf(ids[0]!)).toBeGreaterThanOrEqual(before);
    expect(millisOf(ids.at(-1)!)).toBeLessThanOrEqual(Date.now());
  });

  it("ids made in SQL (nahida_uuid_v7) have the same layout: the server's time, then random bits", async () => {
    const made = async () =>
      (
        await t.db.pool.query<{ id: string; ms: string }>(
          "SELECT nahida_uuid_v7()::text AS id, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS ms FROM generate_series(1, 100)",
        )
      ).rows;
    const first = await made();
    await t.db.pool.query("SELECT pg_sleep(0.005)");
    const second = await made();
    for (const { id, ms } of [...first, ...second]) {
      expect(id).toMatch(V7);
      expect(Math.abs(millisOf(id) - Number(ms))).toBeLessThanOrEqual(1);
    }
    // Made later, sorted after: what keeps an index's inserts on its newest pages.
    const newestFirst = first.map((r) => r.id).sort().at(-1)!;
    expect(second.every((r) => r.id > newestFirst)).toBe(true);
    expect(new Set([...first, ...second].map((r) => r.id)).size).toBe(200);
  });

  it("a ledger row Prisma creates without an id gets a UUIDv7; a session keeps a random one", async () => {
    const lane = await t.db.prisma.lane.create({ data: { key: "ids:lane" } });
    const run = await t.db.prisma.laneRun.create({ data: { laneKey: lane.key, workerId: "w", itemCount: 0 } });
    expect(run.id).toMatch(V7);
    // Sessions are named by a prefix of their id (ids.ts).
    const session = await t.db.prisma.session.create({ data: { laneKey: lane.key } });
    expect(session.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4/);
  });
});
