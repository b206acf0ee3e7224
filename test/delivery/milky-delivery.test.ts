import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OutboundMessage } from "@nahida/contracts";
import { DeliveryRepository, createDatabase, type Database, type Delivery } from "@nahida/db";
import { TypedQueue, createRedis } from "@nahida/queue";
import { startFakeMilky, type FakeMilky } from "../fakes/milky.fake";
import { TEST_REDIS_URL, waitFor } from "../support/infra";
import { startHarness, type Harness } from "../support/nahida-harness";

const TOKEN = "milky-delivery-access-token";
/** How long a delivery waits for a logged-out account here (from its creation). */
const MAX_WAIT_MS = 3_000;
const LOGGED_OUT = { retcode: -403, message: "未处于登录状态" } as const;

let nextPeer = 730_000_000;
const newPeer = () => ++nextPeer;

describe("Milky delivery while the QQ account is logged out (delivery service, Postgres, Redis, fake Milky)", () => {
  let milky: FakeMilky;
  let h: Harness;
  let database: Database;
  let deliveries: DeliveryRepository;
  let redis: Redis;
  let outbound: TypedQueue<"outbound">;

  beforeAll(async () => {
    milky = await startFakeMilky({ accessToken: TOKEN });
    h = await startHarness("delivery_milky", {
      NAHIDA_SERVICES: "delivery",
      MILKY_BASE_URL: milky.baseUrl,
      MILKY_ACCESS_TOKEN: TOKEN,
      DELIVERY_UNAVAILABLE_MAX_WAIT_MS: String(MAX_WAIT_MS),
    });
    database = createDatabase({ url: h.databaseUrl, poolSize: 2 });
    deliveries = new DeliveryRepository(database);
    redis = createRedis({ url: TEST_REDIS_URL });
    outbound = new TypedQueue("outbound", { connection: redis, prefix: h.prefix });
  }, 60_000);
  afterAll(async () => {
    await outbound?.close();
    redis?.disconnect();
    await database?.close();
    await h?.close();
    await milky?.close();
  });

  async function enqueue(peer: number, text: string): Promise<Delivery> {
    const row = await deliveries.create({ target: `milky:private:${peer}`, message: OutboundMessage.parse({ text }), source: "test" });
    await outbound.add("delivery.send", { deliveryId: row.id }, { jobId: row.id });
    return row;
  }

  function settled(id: string, timeoutMs = 15_000): Promise<Delivery> {
    return waitFor(
      async () => {
        const found = await deliveries.get(id);
        return found && ["sent", "failed", "expired"].includes(found.status) ? found : undefined;
      },
      timeoutMs,
      `delivery ${id} to settle`,
      50,
    );
  }

  it("waits while the account is logged out, with the reason as the status, and sends once it is back", async () => {
    const peer = newPeer();
    milky.failNext("send_private_message", LOGGED_OUT, { peerId: peer });
    const row = await enqueue(peer, "the backup finished");
    const waiting = await waitFor(
      async () => {
        const found = await deliveries.get(row.id);
        return found?.status === "queued" && found.error ? found : undefined;
      },
      5_000,
      "the row to wait for the account",
      25,
    );
    expect(waiting.error).toContain("not logged in");
    const done = await settled(row.id);
    expect(done).toMatchObject({ status: "sent", error: null, sentParts: 1 });
    expect(milky.sent(peer)).toHaveLength(1);
  });

  it("fails a half-sent answer at the bound instead of holding its chat for ever, and the chat's next message goes out", async () => {
    const peer = newPeer();
    // Three messages' worth: the first is accepted, then the account is logged out.
    const long = Array.from({ length: 300 }, (_, i) => `第 ${i} 行：这一行足够长，让回答分成三条消息发送。`).join("\n");
    // Refused on the first try of part 1 and on the try at the bound; the account is back after.
    milky.failNext("send_private_message", LOGGED_OUT, { peerId: peer, after: 1, times: 2 });
    const first = await enqueue(peer, long);
    const second = await enqueue(peer, "the next answer");

    const failed = await settled(first.id);
    const waitedMs = failed.updatedAt.getTime() - failed.createdAt.getTime();
    expect(failed).toMatchObject({ status: "failed", sentParts: 1 });
    expect(failed.error).toContain("not logged in");
    expect(failed.error).toContain("gave up after waiting 3 s");
    // The wait is cut to the bound (the sender asks for 30 s between tries).
    expect(waitedMs).toBeGreaterThanOrEqual(MAX_WAIT_MS - 200);
    expect(waitedMs).toBeLessThan(MAX_WAIT_MS + 3_000);
    // The chat is no longer held by the failed answer.
    expect(await settled(second.id)).toMatchObject({ status: "sent" });
    // Part 0, then part 1 refused right away and once more at the bound; then the next answer
    // (counted once both rows settled: the next answer may go out before the test looks).
    const tries = milky.callsTo("send_private_message").filter((c) => c.body.user_id === peer);
    expect(tries.map((c) => JSON.stringify(c.body).includes("the next answer"))).toEqual([false, false, false, true]);
  });
});
