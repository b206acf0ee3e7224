import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/nahida-harness";
import { apiClient } from "./api-client";

const ADMIN = "test-admin-token-sweep-0123456789";

const garbage: unknown[] = [
  null,
  [],
  "string",
  42,
  1e308,
  -1,
  true,
  {},
  { target: 12345, text: "x" },
  { target: ["telegram:private:1"], text: "x" },
  { target: "telegram:private:1", text: 42 },
  { target: "telegram:private:1", text: "x", reply_to: 1e30 },
  { target: "telegram:private:1", text: "x", reply_to: -5 },
  { target: "telegram:private:1", text: "x", reply_to: "abc" },
  { target: "telegram:private:1", text: "x", attachments: "photo.png" },
  { target: "telegram:private:1", text: "x", attachments: [{ type: "sticker", path: "a" }] },
  { target: "telegram:private:1", text: "x", attachments: [{ type: "photo" }] },
  { target: "telegram:private:1", text: "x", attachments: Array(50).fill({ type: "photo", path: "a.png" }) },
  { target: "telegram:private:1", text: "x", session_id: "'; DROP TABLE sessions; --" },
  { target: "telegram:private:1", text: "x", unknown_field: true },
  { target: "\u0000\uffff\ud800", text: "\ud800" },
  { target: "ｔｅｌｅｇｒａｍ:private:1", text: "x" },
  { target: "telegram:private:1:2:3", text: "x" },
  { target: "", text: "" },
  { target: "telegram:private:" + "9".repeat(5000), text: "x" },
  { name: "x", scopes: ["root"] },
  { name: "", scopes: [] },
  { name: 7, scopes: "admin" },
];

const queries = [
  "?limit=0",
  "?limit=-1",
  "?limit=1e309",
  "?limit=99999999999999999999",
  "?offset=abc",
  "?channel=TELEGRAM",
  "?active_since=yesterday",
  "?status=deleted",
  "?unknown=1",
  "?limit=%00",
];

describe("bad input never produces a 5xx", () => {
  let h: Harness;
  let call: ReturnType<typeof apiClient>;
  beforeAll(async () => {
    h = await startHarness("api_sweep", { NAHIDA_API_TOKEN: ADMIN, NAHIDA_SERVICES: "gateway", NAHIDA_API_RATE_LIMIT_PER_MINUTE: "100000" });
    call = apiClient(h.nahida.gatewayAddress!, ADMIN);
  });
  afterAll(async () => h?.close());

  it("answers 4xx with the error shape for garbage bodies on every write route", async () => {
    for (const route of ["/api/send", "/api/tokens"]) {
      for (const body of garbage) {
        const res = await call("POST", route, JSON.stringify(body));
        expect(res.status, `${route} ${JSON.stringify(body)?.slice(0, 80)}`).toBeGreaterThanOrEqual(400);
        expect(res.status, `${route} ${JSON.stringify(body)?.slice(0, 80)}`).toBeLessThan(500);
        expect(res.body?.error?.code, route).toEqual(expect.any(String));
      }
      for (const raw of ["{", "\u0000", "🤖", '{"target": "a"', "x".repeat(100)]) {
        const res = await call("POST", route, raw);
        expect(res.status, `${route} raw ${raw.slice(0, 20)}`).toBe(400);
      }
      const wrongType = await call("POST", route, "target=telegram", { "content-type": "application/x-www-form-urlencoded" });
      expect(wrongType.status).toBe(415);
      const deep = await call("POST", route, `{"target":${"[".repeat(40_000)}${"]".repeat(40_000)}}`);
      expect(deep.status).toBe(400);
      expect(deep.body).toEqual({ error: { code: "json_too_deep", message: "the JSON body nests deeper than 64 levels" } });
    }
  });

  it("answers 4xx for bad ids and query strings on every read route", async () => {
    const ids = ["x", "1", "00000000-0000-0000-0000-000000000000", "%00", "..%2F..%2Fetc%2Fpasswd", "🤖", "a".repeat(3000)];
    for (const route of ["/api/deliveries/", "/api/sessions/", "/api/tokens/"]) {
      for (const id of ids) {
        const res = await call(route === "/api/tokens/" ? "DELETE" : "GET", `${route}${id}`);
        expect(res.status, `${route}${id.slice(0, 40)}`).toBeGreaterThanOrEqual(400);
        expect(res.status, `${route}${id.slice(0, 40)}`).toBeLessThan(500);
        // The documented shape, Fastify's own answers (a URL it cannot decode, an overlong parameter) included.
        expect(res.body?.error?.code, `${route}${id.slice(0, 40)}: ${res.text.slice(0, 80)}`).toEqual(expect.any(String));
      }
    }
    for (const q of queries) {
      for (const route of ["/api/sessions", "/api/sessions/00000000-0000-4000-8000-000000000000/history"]) {
        const res = await call("GET", `${route}${q}`);
        expect(res.status, `${route}${q}`).toBeGreaterThanOrEqual(400);
        expect(res.status, `${route}${q}`).toBeLessThan(500);
      }
    }
    for (const header of ["x".repeat(300), "has space", "\u00e9"]) {
      const res = await fetch(`${h.nahida.gatewayAddress}/api/send`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json", "idempotency-key": encodeURI(header) === header ? header : "bad key" },
        body: JSON.stringify({ target: "telegram:private:1", text: "x" }),
      });
      expect(res.status).toBe(400);
    }
  });

  it("answers what Node's parser refuses before Fastify sees it in the error shape too", async () => {
    const { hostname, port } = new URL(h.nahida.gatewayAddress!);
    const raw = async (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(request));
        let answer = "";
        socket.on("data", (chunk) => (answer += chunk));
        socket.on("end", () => resolve(answer));
        socket.on("error", reject);
      });
    const tooLarge = await raw(`GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
    expect(tooLarge).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(tooLarge.split("\r\n\r\n")[1]!)).toEqual({ error: { code: "bad_request", message: "the request's headers are too large" } });
    const garbage = await raw("NOT HTTP AT ALL\r\n\r\n");
    expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(garbage.split("\r\n\r\n")[1]!)).toEqual({ error: { code: "bad_request", message: "the request is malformed" } });
  });
});
