import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { startHarness, type Harness } from "../support/nahida-harness";
import { waitFor } from "../support/infra";
import { deliveriesTo, ledgerSettled } from "../support/ledger";
import { freePort } from "../support/ports";
import { fixture, privateText } from "./telegram-fixtures";

const SECRET = "webhook-Secret_123";

describe("Telegram webhook mode end to end", () => {
  let h: Harness;
  let db: pg.Pool;
  let url: string;
  const countInbound = async () => (await db.query("SELECT count(*)::int AS n FROM inbound_messages")).rows[0].n as number;
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}/telegram/webhook`;
    h = await startHarness("e2e_webhook", {
      TELEGRAM_MODE: "webhook",
      TELEGRAM_WEBHOOK_SECRET: SECRET,
      TELEGRAM_WEBHOOK_PORT: String(port),
      TELEGRAM_WEBHOOK_URL: url,
    });
    db = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
  });
  afterAll(async () => {
    await db?.end();
    await h?.close();
  });

  it("registers the webhook with its secret and never polls", async () => {
    expect(h.telegram.webhookUrl).toBe(url);
    expect(h.telegram.webhookSecret).toBe(SECRET);
    expect(h.telegram.callsTo("getUpdates")).toEqual([]);
  });

  it("answers 401 to a wrong or missing secret and stores nothing", async () => {
    const body = JSON.stringify({ update_id: 1, ...privateText(300000001, "hi") });
    expect((await post(body, { "x-telegram-bot-api-secret-token": "wrong" })).status).toBe(401);
    expect((await post(body)).status).toBe(401);
    expect(await countInbound()).toBe(0);
  });

  it("answers 400 to malformed bodies and 413 to oversize ones, storing nothing", async () => {
    const auth = { "x-telegram-bot-api-secret-token": SECRET };
    for (const body of ["not json", "[]", "{}", '{"update_id":"x"}', "null"]) {
      const res = await post(body, auth);
      expect(res.status, body).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "bad_request" } });
    }
    const huge = JSON.stringify({ update_id: 2, message: { text: "x".repeat(2 * 1024 * 1024) } });
    expect((await post(huge, auth)).status).toBe(413);
    // Nested 40,000 deep (an edited_message whose date is [{"a":[{"a":…): a 400 before any handler, not a stack overflow.
    const deep = `{"update_id":3,"edited_message":{"date":${'[{"a":'.repeat(20_000)}1${"}]".repeat(20_000)}}}`;
    const refused = await post(deep, auth);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: { code: "json_too_deep", message: "the JSON body nests deeper than 64 levels" } });
    expect(await countInbound()).toBe(0);
  });

  it("stores, answers, and ignores a redelivery of the same update", async () => {
    h.openai.enqueue({ content: "Hello from the webhook." });
    const update = { update_id: 900000001, ...fixture("private-text") };
    expect(await h.telegram.deliverWebhook(update)).toBe(200);
    expect(await h.telegram.deliverWebhook(update)).toBe(200);
    const sends = await waitFor(async () => (h.telegram.sent(123456789).length >= 1 ? h.telegram.sent(123456789) : undefined), 15_000, "the reply");
    expect(sends[0]!.params.text).toBe("Hello from the webhook.");
    await ledgerSettled(h.databaseUrl);
    expect(await deliveriesTo(h.databaseUrl, "telegram:private:123456789")).toEqual({ sent: 1 });
    expect(h.telegram.sent(123456789).length).toBe(1);
    expect(await countInbound()).toBe(1);
  });

  it("answers an update whose update_id was last seen longer ago than the dedupe window (Telegram re-seeded its ids)", async () => {
    h.openai.enqueue({ content: "First answer." });
    const first = { update_id: 900000010, ...privateText(555000111, "first message") };
    expect(await h.telegram.deliverWebhook(first)).toBe(200);
    await waitFor(async () => h.telegram.sent(555000111).length >= 1, 15_000, "the first reply");
    await ledgerSettled(h.databaseUrl);
    // A day and an hour pass without updates; Telegram starts counting again from a seed it chooses.
    await db.query("UPDATE inbound_messages SET received_at = received_at - interval '25 hours' WHERE dedupe_key LIKE '%:update:900000010'");
    h.openai.enqueue({ content: "Second answer." });
    const later = { update_id: 900000010, ...privateText(555000111, "a new message, the same update_id") };
    expect(await h.telegram.deliverWebhook(later)).toBe(200);
    const sends = await waitFor(async () => (h.telegram.sent(555000111).length >= 2 ? h.telegram.sent(555000111) : undefined), 15_000, "the second reply");
    expect(sends.map((c) => c.params.text)).toEqual(["First answer.", "Second answer."]);
    // Both messages are kept; the old one's identity is retired, the new one holds it now.
    const { rows } = await db.query<{ text: string; dedupe_key: string }>(
      "SELECT message->'message'->>'text' AS text, dedupe_key FROM inbound_messages WHERE chat_address = 'telegram:private:555000111' ORDER BY received_at",
    );
    expect(rows.map((r) => r.text)).toEqual(["first message", "a new message, the same update_id"]);
    expect(rows[0]!.dedupe_key).toMatch(/:update:900000010~[0-9a-f-]{36}$/);
    expect(rows[1]!.dedupe_key).toMatch(/:update:900000010$/);
    // And a redelivery of the new one, inside the window, is still a duplicate.
    expect(await h.telegram.deliverWebhook(later)).toBe(200);
    await ledgerSettled(h.databaseUrl);
    expect(h.telegram.sent(555000111)).toHaveLength(2);
  });

  it("acknowledges updates it does not handle without storing them", async () => {
    const before = await countInbound();
    expect(await h.telegram.deliverWebhook({ update_id: 900000002, ...fixture("callback-query") })).toBe(200);
    expect(await h.telegram.deliverWebhook({ update_id: 900000003, ...fixture("edited-message") })).toBe(200);
    expect(await countInbound()).toBe(before);
  });
});
