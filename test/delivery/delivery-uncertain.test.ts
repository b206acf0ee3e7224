import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OutboundMessage, type DeliveryPolicy } from "@nahida/contracts";
import { DeliveryRepository, createDatabase, type Database, type Delivery } from "@nahida/db";
import { TypedQueue, createRedis } from "@nahida/queue";
import type { Redis } from "ioredis";
import { TEST_REDIS_URL, waitFor } from "../support/infra";
import { startHarness, type Harness } from "../support/nahida-harness";

/** A short lease: the record retries give up after 2 s and the row is taken over 2 s after its last touch. */
const LEASE_MS = 2_000;

let nextChat = 720_000_000;
const newChat = () => ++nextChat;

// Here the ledger refuses the record for longer than the record retries last (the table is
// renamed away right after Telegram accepts the message): the row must stay `sending` so
// that its takeover treats the part as one of unknown outcome, following the policy.
describe("a part the platform accepted but the ledger never recorded (delivery service, Postgres, Redis, fake Telegram)", () => {
  let h: Harness;
  let database: Database;
  let deliveries: DeliveryRepository;
  let redis: Redis;
  let outbound: TypedQueue<"outbound">;
  let admin: pg.Client;

  beforeAll(async () => {
    h = await startHarness("delivery_uncertain", { NAHIDA_SERVICES: "delivery", NAHIDA_LEASE_MS: String(LEASE_MS) });
    database = createDatabase({ url: h.databaseUrl, poolSize: 2 });
    deliveries = new DeliveryRepository(database);
    redis = createRedis({ url: TEST_REDIS_URL });
    outbound = new TypedQueue("outbound", { connection: redis, prefix: h.prefix });
    admin = new pg.Client({ connectionString: h.databaseUrl });
    // The outage test terminates this connection too.
    admin.on("error", () => undefined);
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end().catch(() => undefined);
    await outbound?.close();
    redis?.disconnect();
    await database?.close();
    await h?.close();
  });

  async function sendWithUnrecordableFirstPart(policy: DeliveryPolicy): Promise<{ chat: number; row: Delivery }> {
    const chat = newChat();
    h.telegram.afterAccepting(
      "sendMessage",
      async () => {
        await admin.query("ALTER TABLE deliveries RENAME TO deliveries_away");
        // Longer than the record retries (LEASE_MS), then the ledger is back.
        setTimeout(() => void admin.query("ALTER TABLE deliveries_away RENAME TO deliveries"), LEASE_MS + 1_000);
      },
      { chatId: chat },
    );
    return { chat, row: await sendAndSettle(chat, "backup done", 20_000, policy) };
  }

  /** Writes a delivery, enqueues it, and waits (reading through the outage) until it is sent. */
  async function sendAndSettle(chat: number, text: string, timeoutMs: number, policy?: DeliveryPolicy): Promise<Delivery> {
    const created = await deliveries.create({ target: `telegram:private:${chat}`, message: OutboundMessage.parse({ text }), source: "test", ...(policy ? { policy } : {}) });
    await outbound.add("delivery.send", { deliveryId: created.id }, { jobId: created.id });
    return waitFor(
      async () => {
        const found = await deliveries.get(created.id).catch(() => null);
        return found && found.status === "sent" ? found : undefined;
      },
      timeoutMs,
      "the delivery to be sent",
      100,
    );
  }

  it("at_least_once: the takeover sends the part again and lists it as uncertain", async () => {
    const { chat, row } = await sendWithUnrecordableFirstPart("at_least_once");
    expect(row.uncertainParts).toEqual([0]);
    expect(row.platformMessageIds).toEqual(["2"]);
    expect(h.telegram.sent(chat).map((c) => c.params.text)).toEqual(["backup done", "backup done"]);
  });

  it("at_most_once: the takeover does not send the part again and lists it as uncertain", async () => {
    const { chat, row } = await sendWithUnrecordableFirstPart("at_most_once");
    expect(row.uncertainParts).toEqual([0]);
    expect(row.platformMessageIds).toEqual([]);
    expect(h.telegram.sent(chat).map((c) => c.params.text)).toEqual(["backup done"]);
  });

  it("a Postgres outage longer than the lease after Telegram accepted a part: recorded once it is back, never sent again", async () => {
    const chat = newChat();
    const database = new URL(h.databaseUrl).pathname.slice(1);
    const killer = new pg.Client({ connectionString: h.databaseUrl.replace(`/${database}`, "/postgres") });
    await killer.connect();
    try {
      h.telegram.afterAccepting(
        "sendMessage",
        async () => {
          // Every backend of the database is cut, again and again, for longer than the lease.
          const until = Date.now() + LEASE_MS + 1_000;
          const purge = () =>
            killer.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [database]);
          await purge();
          const timer = setInterval(() => (Date.now() > until ? clearInterval(timer) : void purge().catch(() => undefined)), 100);
        },
        { chatId: chat },
      );
      const row = await sendAndSettle(chat, "nightly report", 30_000);
      expect(row.uncertainParts).toEqual([]);
      expect(row.platformMessageIds).toEqual(["1"]);
      expect(h.telegram.sent(chat).map((c) => c.params.text)).toEqual(["nightly report"]);
    } finally {
      await killer.end();
    }
  });
});
