import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDatabase, type Database } from "@nahida/db";
import { startHarness, type Harness } from "../support/nahida-harness";
import { apiClient } from "./api-client";

const ADMIN = "test-admin-token-session-events-0123456789";
const UNKNOWN = "00000000-0000-4000-8000-000000000000";

// Only the gateway runs: nothing takes the lane items, so what the API wrote stays visible.
describe("operator events into sessions, and the send policy", () => {
  let h: Harness;
  let db: Database;
  let admin: ReturnType<typeof apiClient>;
  let sender: ReturnType<typeof apiClient>;
  let reader: ReturnType<typeof apiClient>;
  let senderId: string;
  let session: { id: string; laneKey: string };
  let other: { id: string; laneKey: string };
  beforeAll(async () => {
    h = await startHarness("api_session_events", { NAHIDA_API_TOKEN: ADMIN, NAHIDA_SERVICES: "gateway" });
    db = createDatabase({ url: h.databaseUrl, poolSize: 2 });
    const base = h.nahida.gatewayAddress!;
    admin = apiClient(base, ADMIN);
    const sendToken = (await admin("POST", "/api/tokens", { name: "operator", scopes: ["send"] })).body;
    senderId = sendToken.id;
    sender = apiClient(base, sendToken.token);
    reader = apiClient(base, (await admin("POST", "/api/tokens", { name: "viewer", scopes: ["read"] })).body.token);
    session = await db.prisma.session.create({ data: { laneKey: "chat:telegram:private:31", chatAddress: "telegram:private:31", channel: "telegram" } });
    other = await db.prisma.session.create({ data: { laneKey: "chat:telegram:private:32", chatAddress: "telegram:private:32", channel: "telegram" } });
  });
  afterAll(async () => {
    await db?.close();
    await h?.close();
  });

  it("queues an enqueue event as an agent_event item in the session's lane", async () => {
    const res = await sender("POST", `/api/sessions/${session.id}/events`, { message: "the backup finished", mode: "enqueue" });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ event_id: expect.any(String), status: "queued" });
    const item = await db.prisma.laneItem.findUnique({ where: { kind_refId: { kind: "agent_event", refId: res.body.event_id } } });
    expect(item).toMatchObject({ laneKey: session.laneKey, status: "pending" });
    const event = await db.prisma.sessionEvent.findUniqueOrThrow({ where: { id: res.body.event_id } });
    expect(event).toMatchObject({ sessionId: session.id, source: `api:${senderId}`, fromSessionId: null, depth: 1, content: "the backup finished" });

    const state = await reader("GET", `/api/sessions/${session.id}/events/${res.body.event_id}`);
    expect(state.status).toBe(200);
    expect(state.body).toMatchObject({ event_id: res.body.event_id, session_id: session.id, mode: "enqueue", status: "queued", run_id: null, reply: null, error: null, finished_at: null });
  });

  it("defaults to enqueue", async () => {
    expect((await sender("POST", `/api/sessions/${session.id}/events`, { message: "ping" })).body.status).toBe("queued");
  });

  it("lists a session's events, newest first, each with where it stands", async () => {
    const list = await reader("GET", `/api/sessions/${session.id}/events`);
    expect(list.status).toBe(200);
    expect(list.body.events.map((e: { status: string }) => e.status)).toEqual(["queued", "queued"]);
    expect(list.body.events[1]).toMatchObject({ session_id: session.id, mode: "enqueue", source: `api:${senderId}` });
    expect(Date.parse(list.body.events[0].created_at)).toBeGreaterThanOrEqual(Date.parse(list.body.events[1].created_at));
    expect((await reader("GET", `/api/sessions/${UNKNOWN}/events`)).body).toEqual({ events: [] });
  });

  it("writes a record_only event into the history as an event turn, with no lane item", async () => {
    const res = await sender("POST", `/api/sessions/${other.id}/events`, { message: "note: deploy at 18:00", mode: "record_only" });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ event_id: expect.any(String), status: "recorded" });
    const history = await reader("GET", `/api/sessions/${other.id}/history`);
    expect(history.body.messages).toEqual([expect.objectContaining({ role: "event", source: `api:${senderId}`, content: "note: deploy at 18:00" })]);
    expect(await db.prisma.laneItem.count({ where: { refId: res.body.event_id } })).toBe(0);
    expect(await db.prisma.laneItem.count({ where: { laneKey: other.laneKey } })).toBe(0);
    const state = await reader("GET", `/api/sessions/${other.id}/events/${res.body.event_id}`);
    expect(state.body).toMatchObject({ mode: "record_only", status: "recorded", source: `api:${senderId}` });
  });

  it("reports the answer once the run records it", async () => {
    const { event_id } = (await sender("POST", `/api/sessions/${session.id}/events`, { message: "summarise" })).body;
    const runId = "11111111-1111-4111-8111-111111111111";
    // What the worker's commit writes (SessionEventRepository.finish), without a worker.
    await db.prisma.sessionEvent.update({ where: { id: event_id }, data: { status: "done", reply: "all green", runId, finishedAt: new Date() } });
    const state = await reader("GET", `/api/sessions/${session.id}/events/${event_id}`);
    expect(state.body).toMatchObject({ status: "done", reply: "all green", run_id: runId, finished_at: expect.any(String) });
  });

  it("answers 404 for an unknown session, an unknown event and another session's event", async () => {
    const unknown = await sender("POST", `/api/sessions/${UNKNOWN}/events`, { message: "hello?" });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toEqual({ code: "not_found", message: `session ${UNKNOWN} does not exist` });
    expect(await db.prisma.sessionEvent.count({ where: { sessionId: UNKNOWN } })).toBe(0);
    expect((await reader("GET", `/api/sessions/${session.id}/events/${UNKNOWN}`)).status).toBe(404);
    const { event_id } = (await sender("POST", `/api/sessions/${session.id}/events`, { message: "mine" })).body;
    expect((await reader("GET", `/api/sessions/${other.id}/events/${event_id}`)).status).toBe(404);
  });

  it("checks the body and the scopes", async () => {
    expect((await sender("POST", `/api/sessions/${session.id}/events`, { message: "x", mode: "shout" })).status).toBe(400);
    expect((await sender("POST", `/api/sessions/${session.id}/events`, { message: "   " })).status).toBe(400);
    const refused = await reader("POST", `/api/sessions/${session.id}/events`, { message: "x" });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toEqual({ code: "forbidden", message: "this token lacks the send scope" });
    expect((await apiClient(h.nahida.gatewayAddress!)("POST", `/api/sessions/${session.id}/events`, { message: "x" })).status).toBe(401);
  });

  it("serves the default send policy, replaces it and reads it back", async () => {
    expect((await admin("GET", "/api/policy/send")).body).toEqual({ default: "allow", rules: [] });
    const policy = { default: "deny", rules: [{ effect: "allow", channel: "telegram", chat_type: "private" }, { effect: "deny", session_prefix: "abc" }] };
    const put = await admin("PUT", "/api/policy/send", policy);
    expect(put.status).toBe(200);
    expect(put.body).toEqual(policy);
    expect((await admin("GET", "/api/policy/send")).body).toEqual(policy);
    // Defaults fill in; the next PUT replaces the whole document.
    expect((await admin("PUT", "/api/policy/send", { rules: [] })).body).toEqual({ default: "allow", rules: [] });
    expect((await admin("GET", "/api/policy/send")).body).toEqual({ default: "allow", rules: [] });
  });

  it("refuses a bad policy document with 400 naming the problem, and leaves the stored one", async () => {
    const bad = await admin("PUT", "/api/policy/send", { default: "allow", rules: [{ effect: "maybe" }] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("bad_request");
    expect(bad.body.error.message).toBe(`body.rules.0.effect: Invalid option: expected one of "allow"|"deny"`);
    const prefix = await admin("PUT", "/api/policy/send", { rules: [{ effect: "deny", session_prefix: "NOT HEX" }] });
    expect(prefix.status).toBe(400);
    expect(prefix.body.error.message).toContain("a session id prefix");
    expect((await admin("PUT", "/api/policy/send", { rules: [{ effect: "deny", chanel: "telegram" }] })).status).toBe(400);
    expect((await admin("GET", "/api/policy/send")).body).toEqual({ default: "allow", rules: [] });
  });

  it("keeps the policy to admin tokens", async () => {
    expect((await reader("GET", "/api/policy/send")).status).toBe(403);
    const refused = await sender("PUT", "/api/policy/send", { default: "deny", rules: [] });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toEqual({ code: "forbidden", message: "this token lacks the admin scope" });
  });

  it("documents the routes in the OpenAPI document", async () => {
    const doc = (await admin("GET", "/api/openapi.json")).body;
    expect(Object.keys(doc.paths["/api/sessions/{id}/events"])).toEqual(["post", "get"]);
    expect(Object.keys(doc.paths["/api/sessions/{id}/events/{event_id}"])).toEqual(["get"]);
    expect(Object.keys(doc.paths["/api/policy/send"]).sort()).toEqual(["get", "put"]);
    expect(Object.keys(doc.paths["/api/sessions/{id}/events"].post.responses)).toEqual(expect.arrayContaining(["202", "400", "403", "404"]));
  });
});
