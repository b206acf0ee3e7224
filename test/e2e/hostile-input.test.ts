import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { apiClient } from "../gateway/api-client";
import { sentTo, startHarness, type Harness } from "../support/nahida-harness";
import { privateText } from "./telegram-fixtures";

// Hostile input that reaches the intake by a path no HTTP limit guards (Telegram long
// polling): what cannot be stored as a message is quarantined, visible to operators, and
// the bot goes on.

const ADMIN = "nhd_hostile_input_admin_token_0123456789";

describe("hostile platform events", () => {
  let h: Harness;
  let db: pg.Pool;
  beforeAll(async () => {
    h = await startHarness("hostile", { NAHIDA_API_TOKEN: ADMIN });
    db = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
  });
  afterAll(async () => {
    await db?.end();
    await h?.close();
  });

  it("quarantines a polled update nested too deep to read, shows it to operators, and answers the next message", async () => {
    let date: unknown = 1;
    for (let i = 0; i < 100; i++) date = [{ a: date }];
    h.telegram.pushUpdate({ edited_message: { message_id: 5, chat: { id: 500000001, type: "private" }, date } });
    h.openai.enqueue({ content: "Still fine." });
    h.telegram.pushUpdate(privateText(500000001, "are you there?"));
    const [reply] = await sentTo(h, 500000001, 1);
    expect(reply!.params.text).toBe("Still fine.");

    const api = apiClient(h.nahida.gatewayAddress!, ADMIN);
    const listed = await api("GET", "/api/inbound/quarantine?channel=telegram");
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ total: 1, events: [{ channel: "telegram", account_id: "7000000001", reason: "the update nested deeper than 64 levels" }] });
    expect(listed.body.events[0].raw).toContain("[nested deeper than 64 levels]");
    expect((await api("GET", "/api/inbound/quarantine?limit=0")).status).toBe(400);
    expect((await apiClient(h.nahida.gatewayAddress!)("GET", "/api/inbound/quarantine")).status).toBe(401);
    const metrics = await (await fetch(`${h.nahida.gatewayAddress}/metrics`)).text();
    expect(metrics).toMatch(/^nahida_inbound_events_total\{channel="telegram",outcome="quarantined"\} 1$/m);
  });
});
