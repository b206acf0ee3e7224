import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/nahida-harness";
import { apiClient } from "./api-client";

const ADMIN = "test-admin-token-auth-0123456789";

describe("API authentication, scopes, tokens and rate limit", () => {
  let h: Harness;
  let base: string;
  beforeAll(async () => {
    h = await startHarness("api_auth", { NAHIDA_API_TOKEN: ADMIN, NAHIDA_API_RATE_LIMIT_PER_MINUTE: "30", NAHIDA_SERVICES: "gateway" });
    base = h.nahida.gatewayAddress!;
  });
  afterAll(async () => h?.close());

  const send = { target: "telegram:private:1", text: "x" };

  it("refuses requests without a valid token, but keeps health, readiness and docs open", async () => {
    const anonymous = apiClient(base);
    expect((await anonymous("POST", "/api/send", send)).status).toBe(401);
    expect((await anonymous("GET", "/api/sessions")).body).toEqual({ error: { code: "unauthorized", message: expect.any(String) } });
    expect((await apiClient(base, "wrong-token-value-123")("GET", "/api/sessions")).status).toBe(401);
    expect((await anonymous("GET", "/api/sessions", undefined, { authorization: "Basic abc" })).status).toBe(401);
    expect((await anonymous("GET", "/api/health")).status).toBe(200);
    expect((await anonymous("GET", "/api/ready")).status).toBe(200);
    expect((await anonymous("GET", "/api/openapi.json")).status).toBe(200);
    expect((await anonymous("GET", "/api/docs")).status).toBeLessThan(400);
  });

  it("creates tokens shown once, enforces scopes, lists without secrets, and revokes", async () => {
    const admin = apiClient(base, ADMIN);
    const created = await admin("POST", "/api/tokens", { name: "ci reader", scopes: ["read"] });
    expect(created.status).toBe(201);
    expect(created.body.token).toMatch(/^nah_[A-Za-z0-9_-]{43}$/);
    const reader = apiClient(base, created.body.token);
    expect((await reader("GET", "/api/sessions")).status).toBe(200);
    const forbidden = await reader("POST", "/api/send", send);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error).toEqual({ code: "forbidden", message: "this token lacks the send scope" });
    expect((await reader("GET", "/api/tokens")).status).toBe(403);

    const list = await admin("GET", "/api/tokens");
    expect(list.body.tokens.map((t: { name: string }) => t.name)).toEqual(["NAHIDA_API_TOKEN", "ci reader"]);
    expect(JSON.stringify(list.body)).not.toContain(created.body.token);

    const revoked = await admin("DELETE", `/api/tokens/${created.body.id}`);
    expect(revoked.body.revoked_at).toEqual(expect.any(String));
    expect((await reader("GET", "/api/sessions")).status).toBe(401);
    expect((await admin("DELETE", "/api/tokens/00000000-0000-4000-8000-0000000000ff")).status).toBe(404);
  });

  it("rate-limits per token across requests with 429 in the error shape", async () => {
    const admin = apiClient(base, ADMIN);
    const { body } = await admin("POST", "/api/tokens", { name: "burst", scopes: ["read"] });
    const burst = apiClient(base, body.token);
    const statuses: number[] = [];
    for (let i = 0; i < 35; i++) statuses.push((await burst("GET", "/api/sessions")).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(30);
    const limited = await burst("GET", "/api/sessions");
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe("rate_limited");
    // Another token has its own budget.
    expect((await admin("GET", "/api/sessions")).status).toBe(200);
  });

  it("publishes an OpenAPI document generated from the route schemas", async () => {
    const doc = (await apiClient(base)("GET", "/api/openapi.json")).body;
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/api/send", "/api/deliveries/{id}", "/api/sessions", "/api/sessions/{id}", "/api/sessions/{id}/history", "/api/tokens", "/api/tokens/{id}"]),
    );
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/api/cron", "/api/cron/{id}", "/api/cron/{id}/run", "/api/cron/{id}/runs"]));
    expect(Object.keys(doc.paths["/api/cron/{id}"])).toEqual(expect.arrayContaining(["get", "patch", "delete"]));
    expect(JSON.stringify(doc.components.schemas.CronCreateRequest.properties.schedule)).toContain("every_ms");
    expect(JSON.stringify(doc.paths["/api/send"].post.requestBody)).toContain("#/components/schemas/SendRequest");
    expect(doc.components.schemas.SendRequest.properties.target.description).toContain("<channel>:<type>:<id>");
    expect(Object.keys(doc.components.schemas.SendRequest.properties)).toEqual(["target", "text", "reply_to", "attachments", "session_id", "delivery_policy"]);
  });

  it("gives every operation a unique operationId, a summary and an example", async () => {
    const doc = (await apiClient(base)("GET", "/api/openapi.json")).body;
    const operations = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ at: `${method.toUpperCase()} ${path}`, op })));
    expect(operations.length).toBe(33);
    // One example sits on the media object (`example`), more as `examples`.
    const examplesOf = (content: Record<string, any> | undefined) => Object.values(content ?? {}).flatMap((media: any) => [media.example, media.examples, media.schema?.examples]);
    const lacking = operations.filter(({ op }) => {
      const answers = Object.entries(op.responses ?? {}).filter(([code]) => code.startsWith("2")).map(([, r]: [string, any]) => r.content);
      const examples = [...examplesOf(op.requestBody?.content), ...answers.flatMap(examplesOf), ...(op.parameters ?? []).map((p: any) => p.example ?? p.schema?.example ?? p.schema?.examples)];
      // Sign-out alone has nothing to show: no body either way, no parameter.
      const nothingToShow = !op.requestBody && !op.parameters?.length && answers.every((c) => c === undefined);
      return !op.operationId || !op.summary || (!nothingToShow && !examples.some((e) => e !== undefined));
    });
    expect(lacking.map((l) => l.at)).toEqual([]);
    const ids = operations.map(({ op }) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths["/api/send"].post.operationId).toBe("sendMessage");
    expect(doc.paths["/api/send"].post.requestBody.content["application/json"].example.target).toBe("telegram:group:-1001234567890");
  });
});

describe("with no token configured", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness("api_closed", { NAHIDA_SERVICES: "gateway" });
  });
  afterAll(async () => h?.close());

  it("refuses every API request", async () => {
    const call = apiClient(h.nahida.gatewayAddress!, "anything-at-all-123456");
    expect((await call("GET", "/api/sessions")).status).toBe(401);
    expect((await call("POST", "/api/send", { target: "telegram:private:1", text: "x" })).status).toBe(401);
  });
});
