import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/nahida-harness";
import { apiClient } from "./api-client";

const ADMIN = "test-admin-token-sessions-0123456789";

describe("browser sign-in (POST /api/auth/session) and CSRF", () => {
  let h: Harness;
  let base: string;
  let admin: ReturnType<typeof apiClient>;
  let anonymous: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    h = await startHarness("browser_sessions", { NAHIDA_API_TOKEN: ADMIN });
    base = h.nahida.gatewayAddress!;
    admin = apiClient(base, ADMIN);
    anonymous = apiClient(base);
  });
  afterAll(async () => h?.close());

  async function signIn(token: string) {
    const res = await anonymous("POST", "/api/auth/session", { token });
    expect(res.status).toBe(201);
    return { cookie: res.headers.get("set-cookie")!.split(";")[0]!, csrf: res.body.csrf_token as string, setCookie: res.headers.get("set-cookie")! };
  }

  it("exchanges a token for a signed, HttpOnly, SameSite=Strict cookie that holds no secret", async () => {
    const res = await anonymous("POST", "/api/auth/session", { token: ADMIN });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ token: { name: "NAHIDA_API_TOKEN", scopes: ["admin"] }, csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    const setCookie = res.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/^nahida_session=[A-Za-z0-9_-]{43}\.[A-Za-z0-9%+/=_-]+; Max-Age=28800; Path=\/; HttpOnly; SameSite=Strict$/);
    expect(setCookie).not.toContain(ADMIN);
    const cookie = setCookie.split(";")[0]!;
    const state = await anonymous("GET", "/api/auth/session", undefined, { cookie });
    expect(state.body.csrf_token).toBe(res.body.csrf_token);
  });

  it("refuses a wrong token without a cookie, and a forged or unsigned cookie", async () => {
    const wrong = await anonymous("POST", "/api/auth/session", { token: "not-a-real-token-at-all" });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
    const { cookie } = await signIn(ADMIN);
    const id = cookie.slice("nahida_session=".length).split(".")[0]!;
    for (const forged of [`nahida_session=${id}`, `nahida_session=${id}.AAAA`, `nahida_session=${"A".repeat(43)}.${cookie.split(".")[1]}`]) {
      const res = await anonymous("GET", "/api/sessions", undefined, { cookie: forged });
      expect(res.status, forged).toBe(401);
    }
  });

  it("lets a signed-in browser read, and change only with its CSRF token", async () => {
    const { cookie, csrf } = await signIn(ADMIN);
    expect((await anonymous("GET", "/api/sessions", undefined, { cookie })).status).toBe(200);
    const body = { target: "telegram:private:750000001", text: "from the console" };
    const missing = await anonymous("POST", "/api/send", body, { cookie });
    expect(missing.status).toBe(403);
    expect(missing.body.error.message).toContain("x-csrf-token");
    expect((await anonymous("POST", "/api/send", body, { cookie, "x-csrf-token": "A".repeat(43) })).status).toBe(403);
    const other = await signIn(ADMIN);
    expect((await anonymous("POST", "/api/send", body, { cookie, "x-csrf-token": other.csrf })).status).toBe(403);
    const { body: deliveries } = await admin("GET", "/api/deliveries?target=telegram:private:750000001");
    expect(deliveries.total).toBe(0);
    expect((await anonymous("POST", "/api/send", body, { cookie, "x-csrf-token": csrf })).status).toBe(202);
  });

  it("gives a browser its token's scopes, ends with a sign-out or a revocation", async () => {
    const created = await admin("POST", "/api/tokens", { name: "viewer", scopes: ["read"] });
    const viewer = await signIn(created.body.token);
    expect((await anonymous("GET", "/api/tokens", undefined, { cookie: viewer.cookie })).status).toBe(403);
    expect((await anonymous("GET", "/api/deliveries", undefined, { cookie: viewer.cookie })).status).toBe(200);

    const out = await anonymous("DELETE", "/api/auth/session", undefined, { cookie: viewer.cookie, "x-csrf-token": viewer.csrf });
    expect(out.status).toBe(204);
    expect(out.headers.get("set-cookie")).toMatch(/^nahida_session=; Max-Age=0/);
    expect((await anonymous("GET", "/api/deliveries", undefined, { cookie: viewer.cookie })).status).toBe(401);

    const again = await signIn(created.body.token);
    await admin("DELETE", `/api/tokens/${created.body.id}`);
    expect((await anonymous("GET", "/api/deliveries", undefined, { cookie: again.cookie })).status).toBe(401);
  });

  it("serves the console under a CSP without inline scripts, never framed, and leaves the API's headers alone", async () => {
    const page = await fetch(`${base}/console`);
    const html = await page.text();
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(html).toMatch(/<script type="module" src="\/console\/app\.js\?v=[^"]+"><\/script>/);
    expect(html.match(/<script/g)).toHaveLength(1);
    const script = await fetch(`${base}/console/app.js`);
    expect(script.headers.get("content-type")).toContain("text/javascript");
    expect((await script.text()).length).toBeGreaterThan(1_000);
    const api = await fetch(`${base}/api/health`);
    expect(api.headers.get("content-security-policy")).toBeNull();
  });
});

describe("behind a reverse proxy it is told to trust (GATEWAY_TRUST_PROXY)", () => {
  let h: Harness;
  let anonymous: ReturnType<typeof apiClient>;
  beforeAll(async () => {
    h = await startHarness("browser_sessions_proxy", { NAHIDA_API_TOKEN: ADMIN, NAHIDA_SERVICES: "gateway", GATEWAY_TRUST_PROXY: "127.0.0.1" });
    anonymous = apiClient(h.nahida.gatewayAddress!);
  });
  afterAll(async () => h?.close());

  it("takes the browser's scheme and host from the proxy: a Secure cookie, and the dashboard's own origin", async () => {
    const proxied = { "x-forwarded-proto": "https", "x-forwarded-host": "ops.example.com" };
    const signIn = await anonymous("POST", "/api/auth/session", { token: ADMIN }, proxied);
    expect(signIn.headers.get("set-cookie")).toMatch(/; Secure(;|$)/);
    const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;
    // The browser's Origin is the public one; the dashboard compares it with the forwarded host.
    const change = await anonymous("PUT", "/admin/queues/api/queues/outbound/pause", undefined, { ...proxied, cookie, origin: "https://ops.example.com" });
    expect(change.status).toBe(405);
    const elsewhere = await anonymous("PUT", "/admin/queues/api/queues/outbound/pause", undefined, { ...proxied, cookie, origin: "https://evil.example" });
    expect(elsewhere.status).toBe(403);
  });
});
