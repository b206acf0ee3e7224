import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDatabase, type Database } from "@nahida/db";
import { startHarness, type Harness } from "../support/nahida-harness";
import { apiClient } from "./api-client";

const ADMIN = "test-admin-token-sessions-0123456789";

describe("sessions and filtered history", () => {
  let h: Harness;
  let db: Database;
  let call: ReturnType<typeof apiClient>;
  let sessionId: string;
  beforeAll(async () => {
    h = await startHarness("api_sessions", { NAHIDA_API_TOKEN: ADMIN, NAHIDA_SERVICES: "gateway" });
    db = createDatabase({ url: h.databaseUrl, poolSize: 2 });
    call = apiClient(h.nahida.gatewayAddress!, ADMIN);
    const old = new Date("2026-01-01T00:00:00Z");
    const a = await db.prisma.session.create({ data: { laneKey: "chat:telegram:private:1", chatAddress: "telegram:private:1", channel: "telegram", lastActivityAt: old } });
    await db.prisma.session.create({ data: { laneKey: "chat:milky:group:2", chatAddress: "milky:group:2", channel: "milky" } });
    sessionId = a.id;
    const turns = [
      { role: "user", content: "<think>hidden</think>hello", metadata: { message_context: { timestamp: "2026-05-10T08:03:00.000Z", channel: "telegram", chatType: "private", senderLabel: "Alice", roles: [] } } },
      { role: "assistant", content: "", metadata: { tool_calls: [{ id: "c1", type: "function", function: { name: "current_time", arguments: '{"secret":"args"}' } }] } },
      { role: "tool", content: '{"utc":"2026-05-10T08:03:00Z"}', metadata: { tool_call_id: "c1", name: "current_time" } },
      { role: "assistant", content: `${"long ".repeat(600)}` },
      { role: "user", content: "see https://s3.example.com/a.png?X-Amz-Signature=abc and data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==" },
    ];
    for (const t of turns) await db.prisma.turn.create({ data: { sessionId: a.id, ...t } });
  });
  afterAll(async () => {
    await db?.close();
    await h?.close();
  });

  it("finds sessions by part of their chat address, any case, % and _ taken as written", async () => {
    const found = await call("GET", "/api/sessions?chat=MILKY:GROUP");
    expect(found.body.sessions.map((s: { chat_address: string }) => s.chat_address)).toEqual(["milky:group:2"]);
    expect((await call("GET", "/api/sessions?chat=_")).body.total).toBe(0);
    expect((await call("GET", "/api/sessions?chat=%25")).body.total).toBe(0);
    expect((await call("GET", "/api/sessions?chat=private:1")).body.total).toBe(1);
  });

  it("lists sessions, filtered by channel and activity, paged", async () => {
    const all = await call("GET", "/api/sessions");
    expect(all.body.total).toBe(2);
    expect(all.body.sessions[0].channel).toBe("milky");
    const telegram = await call("GET", "/api/sessions?channel=telegram");
    expect(telegram.body.sessions.map((s: { id: string }) => s.id)).toEqual([sessionId]);
    const recent = await call("GET", "/api/sessions?active_since=2026-06-01T00:00:00Z");
    expect(recent.body.sessions.map((s: { channel: string }) => s.channel)).toEqual(["milky"]);
    const paged = await call("GET", "/api/sessions?limit=1&offset=1");
    expect(paged.body).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect(paged.body.sessions).toHaveLength(1);
  });

  it("returns one session, and 404 for unknown ids", async () => {
    expect((await call("GET", `/api/sessions/${sessionId}`)).body).toMatchObject({ id: sessionId, chat_address: "telegram:private:1" });
    expect((await call("GET", "/api/sessions/00000000-0000-4000-8000-000000000000")).status).toBe(404);
    expect((await call("GET", "/api/sessions/not-a-uuid")).status).toBe(400);
  });

  it("returns the filtered, truncated history", async () => {
    const res = await call("GET", `/api/sessions/${sessionId}/history`);
    expect(res.status).toBe(200);
    const { messages, total, truncated } = res.body;
    expect(total).toBe(5);
    expect(truncated).toBe(true);
    expect(messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user"]);
    expect(messages[0].content).toBe("hello");
    expect(messages[0].context.senderLabel).toBe("Alice");
    expect(messages[1].tool_calls).toEqual([{ name: "current_time" }]);
    expect(JSON.stringify(messages)).not.toContain("secret");
    expect(messages[2].tool_name).toBe("current_time");
    expect(messages[3].content.length).toBeLessThanOrEqual(2000);
    expect(messages[4].content).not.toContain("X-Amz-Signature");
    expect(messages[4].content).not.toContain("iVBORw0KGgo");

    const page = await call("GET", `/api/sessions/${sessionId}/history?limit=2`);
    expect(page.body.messages.map((m: { role: string }) => m.role)).toEqual(["assistant", "user"]);
    expect(page.body.truncated).toBe(true);
  });
});
