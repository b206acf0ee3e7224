import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { explainingPool } from "../../../../test/support/explain";
import { createTestDatabase, type TestDatabase } from "../../../../test/support/infra";
import { hotStatements } from "../statements";
import { DeliveryRepository } from "./delivery.repository";

/**
 * A delivery waits for the earlier unsent deliveries to its chat; finding them must cost
 * what is unsent to that chat, neither what the chat was ever sent (the index on (target,
 * seq) alone) nor every chat's unsent backlog (the index on (status, created_at), which a
 * planner whose statistics say nothing is unsent takes). auto_explain sends each plan back
 * and the rows its scans read are counted.
 */
describe("DeliveryRepository.claim reads the chat's unsent deliveries, not its history (real Postgres)", () => {
  let t: TestDatabase;
  let explained: Awaited<ReturnType<typeof explainingPool>>;
  const target = "telegram:group:-100123";

  beforeAll(async () => {
    t = await createTestDatabase("delivery_plans");
    // A busy group's history: thousands of deliveries sent to it.
    await t.db.pool.query(
      `INSERT INTO deliveries (id, target, message, status, source, sent_parts, created_at, updated_at, sent_at)
       SELECT gen_random_uuid(), $1, '{"text":"old"}', 'sent', 'agent', 1, now() - interval '1 day', now() - interval '1 day', now() - interval '1 day'
         FROM generate_series(1, 5000)`,
      [target],
    );
    await t.db.pool.query("VACUUM ANALYZE deliveries");
    // The statistics stay those of the history (autovacuum would analyze the backlog).
    await t.db.pool.query("ALTER TABLE deliveries SET (autovacuum_enabled = false)");
    // Then a backlog to other chats that the statistics have not seen (a burst being sent).
    await t.db.pool.query(
      `INSERT INTO deliveries (id, target, message, source)
       SELECT gen_random_uuid(), 'telegram:private:' || (1000 + g % 500), '{"text":"queued"}', 'agent' FROM generate_series(1, 3000) g`,
    );
    explained = await explainingPool(t.url);
  });

  afterAll(async () => {
    await explained?.pool.end();
    await t?.drop();
  });

  it("claims a new delivery after reading a few rows, beside a long history and a backlog elsewhere", async () => {
    const deliveries = new DeliveryRepository({ prisma: t.db.prisma, statements: hotStatements(explained.pool, { prepared: true }) });
    const created = await new DeliveryRepository(t.db).create({ target, message: { text: "new", attachments: [], extra: {} }, source: "agent" });
    let claim: Awaited<ReturnType<DeliveryRepository["claim"]>> | undefined;
    const [plan] = await explained.explain(async () => (claim = await deliveries.claim(created.id, 60_000)));
    expect(claim?.kind).toBe("claimed");
    expect(plan!.rowsRead).toBeGreaterThan(0);
    expect(plan!.rowsRead, plan!.text).toBeLessThan(20);
  });
});
