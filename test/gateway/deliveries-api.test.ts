import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OutboundMessage } from "@nahida/contracts";
import { waitFor } from "../support/infra";
import { spawnGatewayReplica, startHarness, type Harness } from "../support/nahida-harness";
import type { SpawnedProcess } from "../support/processes";
import { apiClient } from "./api-client";

const ADMIN = "test-admin-token-deliveries-0123456789";
const FINAL = new Set(["sent", "failed", "expired"]);

let nextChat = 730_000_000;
const newChat = () => ++nextChat;

describe("GET /api/deliveries and POST /api/deliveries/:id/retry", () => {
  let h: Harness;
  let admin: ReturnType<typeof apiClient>;
  let reader: ReturnType<typeof apiClient>;
  let db: pg.Client;
  let second: SpawnedProcess;
  let secondAdmin: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    h = await startHarness("api_deliveries", { NAHIDA_API_TOKEN: ADMIN });
    admin = apiClient(h.nahida.gatewayAddress!, ADMIN);
    const created = await admin("POST", "/api/tokens", { name: "dashboard", scopes: ["read"] });
    reader = apiClient(h.nahida.gatewayAddress!, created.body.token);
    db = new pg.Client({ connectionString: h.databaseUrl });
    await db.connect();
    // A second gateway replica on the same database and queues, for retries that race.
    const replica = await spawnGatewayReplica(h, ADMIN);
    second = replica.process;
    secondAdmin = apiClient(replica.base, ADMIN);
  });
  afterAll(async () => {
    second?.kill("SIGTERM");
    await second?.exited;
    await db?.end();
    await h?.close();
  });

  async function send(target: string, text: string): Promise<string> {
    const res = await admin("POST", "/api/send", { target, text });
    expect(res.status).toBe(202);
    return res.body.delivery_id;
  }

  function settled(id: string) {
    return waitFor(async () => {
      const d = await admin("GET", `/api/deliveries/${id}`);
      return FINAL.has(d.body.status) ? d.body : undefined;
    }, 15_000, `delivery ${id} to settle`);
  }

  /** A later delivery to the same chat is sent only after every earlier one settled: once it is out, nothing more of them comes. */
  async function quietAfter(chat: number) {
    const marker = await send(`telegram:private:${chat}`, "marker");
    expect((await settled(marker)).status).toBe("sent");
  }

  it("lists deliveries by status, target, source and time, newest first, paged", async () => {
    const chatA = newChat();
    const chatB = newChat();
    const before = new Date(Date.now() - 1_000).toISOString();
    const a1 = await send(`telegram:private:${chatA}`, "a1");
    h.telegram.failNext("sendMessage", { status: 400, description: "Bad Request: chat not found" }, { chatId: chatB });
    const b1 = await send(`telegram:private:${chatB}`, "b1");
    const a2 = await send(`telegram:private:${chatA}`, "a2");
    for (const id of [a1, b1, a2]) await settled(id);

    const byTarget = await reader("GET", `/api/deliveries?target=telegram:private:${chatA}`);
    expect(byTarget.status).toBe(200);
    expect(byTarget.body).toMatchObject({ total: 2, limit: 50, offset: 0 });
    expect(byTarget.body.deliveries.map((d: { id: string }) => d.id)).toEqual([a2, a1]);

    const failed = await reader("GET", `/api/deliveries?status=failed&target=telegram:private:${chatB}`);
    expect(failed.body.deliveries).toEqual([expect.objectContaining({ id: b1, status: "failed", error: "Bad Request: chat not found", source: "api" })]);

    const paged = await reader("GET", `/api/deliveries?target=telegram:private:${chatA}&limit=1&offset=1`);
    expect(paged.body).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect(paged.body.deliveries.map((d: { id: string }) => d.id)).toEqual([a1]);

    const inRange = await reader("GET", `/api/deliveries?source=api&since=${before}&until=${new Date(Date.now() + 60_000).toISOString()}&limit=200`);
    expect(inRange.body.deliveries.map((d: { id: string }) => d.id)).toEqual(expect.arrayContaining([a1, b1, a2]));
    const future = await reader("GET", `/api/deliveries?since=${new Date(Date.now() + 60_000).toISOString()}`);
    expect(future.body).toMatchObject({ deliveries: [], total: 0 });
    const otherSource = await reader("GET", `/api/deliveries?source=cron:nope&target=telegram:private:${chatA}`);
    expect(otherSource.body.total).toBe(0);
  });

  it("refuses bad filters with 400 and a message, and needs a token with read", async () => {
    const cases: [string, RegExp][] = [
      ["status=lost", /status/],
      ["target=milky:10001", /expected <channel>:<type>:<id>/],
      ["since=yesterday", /since/],
      ["since=2026-12-02T00:00:00Z&until=2026-12-01T00:00:00Z", /since must be before until/],
      ["limit=0", /limit/],
      ["colour=red", /colour|unrecognized/i],
    ];
    for (const [query, message] of cases) {
      const res = await reader("GET", `/api/deliveries?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error.message, query).toMatch(message);
    }
    expect((await apiClient(h.nahida.gatewayAddress!)("GET", "/api/deliveries")).status).toBe(401);
  });

  it("retries a failed delivery on the same row: the parts accepted before are not sent again, and it is sent exactly once", async () => {
    const chat = newChat();
    const first = "A".repeat(3000);
    const secondPart = "B".repeat(3000);
    // Part 0 is accepted; the platform refuses part 1 for good.
    h.telegram.afterAccepting(
      "sendMessage",
      async () => h.telegram.failNext("sendMessage", { status: 400, description: "Bad Request: message is too long" }, { chatId: chat }),
      { chatId: chat },
    );
    const id = await send(`telegram:private:${chat}`, `${first}\n\n${secondPart}`);
    const failed = await settled(id);
    expect(failed).toMatchObject({ status: "failed", error: "Bad Request: message is too long", platform_message_ids: ["1"] });
    expect(h.telegram.sent(chat).map((c) => String(c.params.text)[0])).toEqual(["A", "B"]);

    expect((await reader("POST", `/api/deliveries/${id}/retry`)).status).toBe(403);
    const retried = await admin("POST", `/api/deliveries/${id}/retry`);
    expect(retried.status).toBe(202);
    expect(retried.body).toMatchObject({ id, status: "queued" });
    expect(retried.body.error).toBeUndefined();
    const sent = await settled(id);
    expect(sent).toMatchObject({ id, status: "sent", platform_message_ids: ["1", "2"], attempts: 2 });

    // Sent once: a retry of a sent delivery is refused and changes nothing.
    const again = await admin("POST", `/api/deliveries/${id}/retry`);
    expect(again.status).toBe(409);
    expect(again.body.error).toEqual({ code: "conflict", message: `delivery ${id} is sent; only a failed or expired one can be retried` });
    await quietAfter(chat);
    // Part 0 once, the refused part 1, part 1 once more, and nothing after it but the marker.
    expect(h.telegram.sent(chat).map((c) => String(c.params.text)[0])).toEqual(["A", "B", "B", "m"]);
  });

  it("sends a delivery retried at once through two gateway replicas exactly once", async () => {
    const chat = newChat();
    h.telegram.failNext("sendMessage", { status: 400, description: "Bad Request: chat not found" }, { chatId: chat });
    const id = await send(`telegram:private:${chat}`, "page the on-call");
    expect((await settled(id)).status).toBe("failed");

    const clients = [admin, secondAdmin];
    const responses = await Promise.all(Array.from({ length: 6 }, (_, i) => clients[i % 2]!("POST", `/api/deliveries/${id}/retry`)));
    expect(responses.map((r) => r.status).sort()).toEqual([202, 409, 409, 409, 409, 409]);
    expect((await settled(id)).status).toBe("sent");
    await quietAfter(chat);
    expect(h.telegram.sent(chat).map((c) => c.params.text)).toEqual(["page the on-call", "page the on-call", "marker"]);
    const { rows } = await db.query("SELECT count(*)::int AS n, max(attempts) AS attempts FROM deliveries WHERE target = $1 AND source = 'api' AND message->>'text' = $2", [`telegram:private:${chat}`, "page the on-call"]);
    expect(rows[0]).toEqual({ n: 1, attempts: 2 });
  });

  it("retries an expired delivery with a fresh TTL", async () => {
    const chat = newChat();
    const message = OutboundMessage.parse({ text: "too late?" });
    // A row whose TTL passed before any job ran it (as after a long outage).
    const { rows } = await db.query(
      "INSERT INTO deliveries (id, target, message, source, expires_at) VALUES (gen_random_uuid(), $1, $2::jsonb, 'api', now() - interval '1 minute') RETURNING id::text AS id",
      [`telegram:private:${chat}`, JSON.stringify(message)],
    );
    const id = rows[0].id as string;
    const expired = await admin("GET", `/api/deliveries?status=expired&target=telegram:private:${chat}`);
    expect(expired.body.deliveries).toEqual([expect.objectContaining({ id, status: "expired", error: "expired before it could be sent" })]);

    const retried = await admin("POST", `/api/deliveries/${id}/retry`);
    expect(retried.status).toBe(202);
    expect((await settled(id)).status).toBe("sent");
    const { rows: after } = await db.query("SELECT expires_at > now() AS fresh FROM deliveries WHERE id = $1", [id]);
    expect(after[0].fresh).toBe(true);
    expect(h.telegram.sent(chat).map((c) => c.params.text)).toEqual(["too late?"]);
  });

  it("answers a retry of an unknown, malformed or live delivery with a 4xx and changes nothing", async () => {
    const missing = await admin("POST", "/api/deliveries/00000000-0000-4000-8000-00000000dead/retry");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("not_found");
    const malformed = await admin("POST", "/api/deliveries/nope/retry");
    expect(malformed.status).toBe(400);
    // A queued row the delivery service has not picked up (no job): a retry must not add one.
    const { rows } = await db.query(
      "INSERT INTO deliveries (id, target, message, source) VALUES (gen_random_uuid(), $1, $2::jsonb, 'api') RETURNING id::text AS id, updated_at",
      [`telegram:private:${newChat()}`, JSON.stringify(OutboundMessage.parse({ text: "still queued" }))],
    );
    const live = await admin("POST", `/api/deliveries/${rows[0].id}/retry`);
    expect(live.status).toBe(409);
    expect(live.body.error.message).toMatch(/is queued; only a failed or expired one can be retried/);
    const { rows: after } = await db.query("SELECT status, attempts, updated_at FROM deliveries WHERE id = $1", [rows[0].id]);
    expect(after[0]).toEqual({ status: "queued", attempts: 0, updated_at: rows[0].updated_at });
  });
});
