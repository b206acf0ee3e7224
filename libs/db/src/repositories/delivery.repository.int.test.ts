import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../../test/support/infra";
import { DeliveryRepository } from "./delivery.repository";

/**
 * `create` on its own reads back only what Postgres assigns (seq, created_at) and fills in
 * the rest from its input and the columns' defaults: the row it returns must be the row a
 * fresh read finds, for a bare request and for one that sets every optional field, a
 * message Postgres would refuse as it is among them.
 */
describe("DeliveryRepository.create returns the row as stored (real Postgres)", () => {
  let t: TestDatabase;
  let deliveries: DeliveryRepository;

  beforeAll(async () => {
    t = await createTestDatabase("delivery_create");
    deliveries = new DeliveryRepository(t.db);
  });

  afterAll(async () => {
    await t?.drop();
  });

  const stored = (id: string) => t.db.prisma.delivery.findUniqueOrThrow({ where: { id } });

  it("a bare request: every default as the table has it", async () => {
    const created = await deliveries.create({ target: "telegram:private:1", message: { text: "hi", attachments: [], extra: {} }, source: "api" });
    expect(created).toStrictEqual(await stored(created.id));
  });

  it("every optional field, and strings Postgres would refuse as they are (a lone surrogate, a NUL)", async () => {
    const created = await deliveries.create({
      id: "01900000-0000-7000-8000-000000000001",
      target: "milky:group:42",
      message: { text: "a\uD800b\u0000c", replyTo: "7", attachments: [{ type: "photo", url: "https://example.com/a.png" }], extra: { k: ["\uDC00"] } },
      source: "cron:\uD800abc",
      sessionId: "00000000-0000-4000-8000-000000000002",
      inboundMessageId: "00000000-0000-4000-8000-000000000003",
      runId: "00000000-0000-4000-8000-000000000004",
      expiresAt: new Date("2030-01-02T03:04:05.678Z"),
      policy: "at_most_once",
      requestHash: "h",
    });
    const row = await stored(created.id);
    expect(created).toStrictEqual(row);
    expect(row.source).toBe("cron:\uFFFDabc");
    expect(row.message).toEqual({ text: "a\uFFFDbc", replyTo: "7", attachments: [{ type: "photo", url: "https://example.com/a.png" }], extra: { k: ["\uFFFD"] } });
  });

  it("seq keeps the order of creation", async () => {
    const a = await deliveries.create({ target: "telegram:private:2", message: { text: "1", attachments: [], extra: {} }, source: "api" });
    const b = await deliveries.create({ target: "telegram:private:2", message: { text: "2", attachments: [], extra: {} }, source: "api" });
    expect(b.seq).toBeGreaterThan(a.seq);
  });
});
