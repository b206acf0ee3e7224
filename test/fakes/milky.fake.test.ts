import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { waitFor } from "../support/infra";
import { startFakeMilky, type FakeMilky } from "./milky.fake";

const TOKEN = "fake-milky-token";

describe("fake Milky implementation", () => {
  let milky: FakeMilky;
  const received: { headers: IncomingMessage["headers"]; body: string }[] = [];
  const hook = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => hook.listen(0, "127.0.0.1", () => resolve()));
    milky = await startFakeMilky({ accessToken: TOKEN, webhookUrls: [`http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`] });
  });
  afterAll(async () => {
    await milky?.close();
    await new Promise((r) => hook.close(r));
  });

  const call = (api: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }) =>
    fetch(`${milky.baseUrl}/api/${api}`, { method: "POST", headers, body: typeof body === "string" ? body : JSON.stringify(body) });

  it("answers the protocol's HTTP statuses: 401 without the token, 404 for an unknown API, 415 for another content type", async () => {
    expect((await call("get_login_info", {}, { "content-type": "application/json" })).status).toBe(401);
    expect((await call("get_login_info", {}, { authorization: "Bearer nope", "content-type": "application/json" })).status).toBe(401);
    expect((await call("no_such_api", {})).status).toBe(404);
    expect((await call("get_login_info", "{}", { authorization: `Bearer ${TOKEN}`, "content-type": "text/plain" })).status).toBe(415);
    expect(milky.callsTo("get_login_info")).toEqual([]);
  });

  it("answers in the envelope, refuses bad parameters with -400 and records the calls", async () => {
    expect(await (await call("get_login_info", {})).json()).toEqual({ status: "ok", retcode: 0, data: { uin: 3000000001, nickname: "Nahida" } });
    const bad = await (await call("send_private_message", { user_id: -1, message: [] })).json();
    expect(bad).toMatchObject({ status: "failed", retcode: -400 });
    const good = await (await call("send_private_message", { user_id: 10001, message: [{ type: "text", data: { text: "hi" } }] })).json();
    expect(good).toMatchObject({ status: "ok", retcode: 0, data: { message_seq: 1001 } });
    expect(milky.sent(10001)).toEqual([{ api: "send_private_message", scene: "friend", peerId: 10001, segments: [{ type: "text", data: { text: "hi" } }], id: "1001" }]);
    expect(milky.callsTo("send_private_message")).toHaveLength(2);
  });

  it("fails the next matching call as scripted", async () => {
    milky.failNext("send_group_message", { retcode: -403, message: "未处于登录状态" }, { peerId: 20001 });
    const send = () => call("send_group_message", { group_id: 20001, message: [{ type: "text", data: { text: "x" } }] });
    expect(await (await send()).json()).toEqual({ status: "failed", retcode: -403, message: "未处于登录状态" });
    expect(await (await send()).json()).toMatchObject({ status: "ok" });
  });

  it("pushes events over WebSocket and SSE to clients with the token, refuses others, and POSTs them to the WebHook", async () => {
    const refused = new WebSocket(`${milky.baseUrl.replace("http", "ws")}/event`);
    await new Promise((resolve) => refused.on("error", resolve));
    expect(milky.eventConnectionsRefused).toBe(1);

    const ws = new WebSocket(`${milky.baseUrl.replace("http", "ws")}/event?access_token=${TOKEN}`);
    const frames: string[] = [];
    ws.on("message", (data) => frames.push(data.toString()));
    await new Promise((resolve) => ws.on("open", resolve));
    const sse = await fetch(`${milky.baseUrl}/event`, { headers: { accept: "text/event-stream", authorization: `Bearer ${TOKEN}` } });
    expect(sse.headers.get("content-type")).toBe("text/event-stream");
    await waitFor(async () => milky.eventClients().websocket === 1 && milky.eventClients().sse === 1, 2_000, "both clients");

    const event = { time: 1, self_id: 3000000001, event_type: "friend_nudge", data: { user_id: 10001 } };
    expect(await milky.pushEvent(event)).toEqual([204]);
    await waitFor(async () => frames.length === 1, 2_000, "the WebSocket frame");
    expect(JSON.parse(frames[0]!)).toEqual(event);
    const reader = sse.body!.getReader();
    let text = "";
    while (!text.includes("data: ")) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toContain(`data: ${JSON.stringify(event)}\n\n`);
    expect(received).toHaveLength(1);
    expect(received[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(JSON.parse(received[0]!.body)).toEqual(event);

    milky.dropEventClients();
    await waitFor(async () => milky.eventClients().websocket + milky.eventClients().sse === 0, 2_000, "the clients to be dropped");
    await reader.cancel().catch(() => undefined);
  });

  it("keeps pushed messages for get_history_messages", async () => {
    const message = { message_scene: "group", peer_id: 20009, message_seq: 5, sender_id: 10002, time: 1, segments: [] };
    await milky.pushEvent({ time: 1, self_id: 3000000001, event_type: "message_receive", data: message });
    const history = await (await call("get_history_messages", { message_scene: "group", peer_id: 20009 })).json();
    expect(history).toEqual({ status: "ok", retcode: 0, data: { messages: [message] } });
  });
});
