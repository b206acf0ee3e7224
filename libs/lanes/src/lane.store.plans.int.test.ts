import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { explainingPool } from "../../../test/support/explain";
import { createTestDatabase, type TestDatabase } from "../../../test/support/infra";
import { hotStatements } from "@nahida/db";
import { LaneStore } from "./lane.store";

/**
 * A lane's statements must cost what that lane holds, whatever the rest of the ledger holds.
 * On a large ledger the planner's statistics say no item is open (ANALYZE saw millions of
 * finished ones), and while a backlog builds it sees no reason to think otherwise: a
 * statement it could answer from the index of every lane's open items then reads all of
 * them, three times per claim (bench:ledger found 850 read per claim during a burst). Each
 * statement here runs with auto_explain, which sends its plan back as a notice, and the rows
 * its scans read are counted.
 */
describe("LaneStore's statements read only their own lane (real Postgres)", () => {
  let t: TestDatabase;
  let explained: Awaited<ReturnType<typeof explainingPool>>;
  let store: LaneStore;
  const explain = (fn: () => Promise<unknown>) => explained.explain(fn);

  beforeAll(async () => {
    t = await createTestDatabase("lane_plans");
    const q = (sql: string) => t.db.pool.query(sql);
    // A ledger of finished items, analyzed as such...
    await q(`INSERT INTO lanes (key) SELECT 'old:' || g FROM generate_series(1, 200) g`);
    await q(`INSERT INTO lane_items (id, lane_key, seq, kind, ref_id, status, attempts, created_at, done_at)
             SELECT gen_random_uuid(), 'old:' || (1 + g % 200), g, 'inbound', 'old-' || g, 'done', 1, now() - interval '2 days', now() - interval '2 days'
               FROM generate_series(1, 50000) g`);
    await q("VACUUM ANALYZE lane_items");
    // The statistics stay those of the finished ledger (autovacuum would analyze the backlog).
    await q("ALTER TABLE lane_items SET (autovacuum_enabled = false)");
    // ...then a backlog in other lanes that the statistics have not seen.
    await q(`INSERT INTO lanes (key) SELECT 'busy:' || g FROM generate_series(1, 400) g`);
    await q(`INSERT INTO lane_items (id, lane_key, seq, kind, ref_id, created_at)
             SELECT gen_random_uuid(), 'busy:' || (1 + g % 400), g, 'inbound', 'busy-' || g, now() FROM generate_series(1, 4000) g`);
    explained = await explainingPool(t.url);
    store = new LaneStore({ prisma: t.db.prisma, pool: explained.pool, statements: hotStatements(explained.pool, { prepared: true }) });
  });

  afterAll(async () => {
    await explained?.pool.end();
    await t?.drop();
  });

  it("a claim, a run's read, its commit and the look for more read their own lane, not the backlog", async () => {
    const lane = "chat:telegram:private:1";
    const appender = new LaneStore(t.db);
    await appender.append(lane, { kind: "inbound", refId: "mine-1" });
    const options = { workerId: "worker", maxBatchSize: 10, maxAttempts: 3 };

    let claimed: Awaited<ReturnType<LaneStore["claimAndStart"]>> = null;
    const [claim] = await explain(async () => (claimed = await store.claimAndStart(lane, "worker", 10_000, options)));
    expect(claimed!.run!.items.map((i) => i.refId)).toEqual(["mine-1"]);
    await appender.append(lane, { kind: "inbound", refId: "mine-2" });
    const [read] = await explain(() => store.openItems(lane, 10));
    const [commit] = await explain(() => store.commitStatement(claimed!.lease, claimed!.run!.runId, new Map(), [], 1n));
    const [more] = await explain(() => store.hasOpenItems(lane));
    for (const plan of [claim, read, commit, more]) {
      expect(plan!.rowsRead).toBeGreaterThan(0);
      expect(plan!.rowsRead).toBeLessThan(20);
    }
    expect((await t.db.prisma.laneItem.findFirstOrThrow({ where: { refId: "mine-1" } })).status).toBe("done");
  });

  it("the sweeper and the gauges read the index of unfinished items", async () => {
    const [sweep] = await explain(() => store.strandedLanes(0, 500));
    expect(sweep!.indexes).toContain("lane_items_unfinished_created_at_idx");
    const [stats] = await explain(() => store.openItemStats());
    expect(stats!.indexes).toContain("lane_items_unfinished_created_at_idx");
  });
});
