import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/infra";
import { startHarness, type Harness } from "../support/nahida-harness";
import { apiClient } from "./api-client";

const ADMIN = "test-admin-token-dashboard-0123456789";
const QUEUES = "/admin/queues";

describe("queue dashboard (bull-board under /admin/queues)", () => {
  let h: Harness;
  let base: string;
  let admin: ReturnType<typeof apiClient>;
  let anonymous: ReturnType<typeof apiClient>;
  let readToken: string;

  beforeAll(async () => {
    h = await startHarness("api_dashboard", { NAHIDA_API_TOKEN: ADMIN });
    base = h.nahida.gatewayAddress!;
    admin = apiClient(base, ADMIN);
    anonymous = apiClient(base);
    readToken = (await admin("POST", "/api/tokens", { name: "reader", scopes: ["read", "send", "cron"] })).body.token;
  });
  afterAll(async () => h?.close());

  it("refuses requests without an admin token, and sends a browser to the sign-in form", async () => {
    const none = await anonymous("GET", `${QUEUES}/api/queues`);
    expect(none.status).toBe(401);
    expect(none.body.error).toEqual({ code: "unauthorized", message: `send Authorization: Bearer <admin token>, or sign in at ${QUEUES}/login` });
    const browser = await fetch(`${base}${QUEUES}`, { headers: { accept: "text/html" }, redirect: "manual" });
    expect(browser.status).toBe(303);
    expect(browser.headers.get("location")).toBe(`${QUEUES}/login`);
    expect(await (await fetch(`${base}${QUEUES}/login`)).text()).toContain(`action="${QUEUES}/session"`);

    const reader = apiClient(base, readToken);
    for (const path of [QUEUES, `${QUEUES}/api/queues`, `${QUEUES}/api/queues/outbound/retry/failed`]) {
      const res = await reader(path.endsWith("failed") ? "PUT" : "GET", path);
      expect(res.status, path).toBe(403);
      expect(res.body.error.code, path).toBe("forbidden");
    }
    const signIn = await reader("POST", `${QUEUES}/session`);
    expect(signIn.status).toBe(403);
    expect(signIn.headers.get("set-cookie")).toBeNull();
    expect((await apiClient(base, "not-a-real-token-at-all")("GET", `${QUEUES}/api/queues`)).status).toBe(401);
  });

  it("shows an admin the queues and their jobs, read-only", async () => {
    const sent = await admin("POST", "/api/send", { target: "telegram:private:740000001", text: "visible on the board" });
    await waitFor(async () => (await admin("GET", `/api/deliveries/${sent.body.delivery_id}`)).body.status === "sent", 15_000, "the delivery");

    const page = await fetch(`${base}${QUEUES}`, { headers: { authorization: `Bearer ${ADMIN}` } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Nahida queues");

    const queues = await admin("GET", `${QUEUES}/api/queues?activeQueue=outbound&status=completed&page=1`);
    expect(queues.status).toBe(200);
    const byName = new Map<string, any>(queues.body.queues.map((q: { name: string }) => [q.name, q]));
    expect([...byName.keys()].sort()).toEqual(["lanes", "outbound"]);
    const outbound = byName.get("outbound");
    expect(outbound.readOnlyMode).toBe(true);
    expect(outbound.counts.completed).toBeGreaterThanOrEqual(1);
    expect(outbound.jobs.map((j: { id: string }) => j.id)).toContain(sent.body.delivery_id);

    // Read-only: writes are refused by bull-board and change nothing.
    const retryAll = await admin("PUT", `${QUEUES}/api/queues/outbound/retry/completed`);
    expect(retryAll.status).toBe(405);
    const clean = await admin("PUT", `${QUEUES}/api/queues/outbound/clean/completed`);
    expect(clean.status).toBe(405);
    const after = await admin("GET", `${QUEUES}/api/queues?activeQueue=outbound&status=completed&page=1`);
    expect(after.body.queues.find((q: { name: string }) => q.name === "outbound").counts.completed).toBe(outbound.counts.completed);
  });

  it("signs a browser in with a short-lived cookie that stops working when its token is revoked", async () => {
    const second = await admin("POST", "/api/tokens", { name: "ops-admin", scopes: ["admin"] });
    const form = await fetch(`${base}${QUEUES}/session`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: second.body.token }).toString(),
      redirect: "manual",
    });
    expect(form.status).toBe(303);
    expect(form.headers.get("location")).toBe(QUEUES);
    const setCookie = form.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/^nahida_admin=[A-Za-z0-9_-]{43}; Path=\/admin\/queues; Max-Age=900; HttpOnly; SameSite=Strict$/);
    expect(setCookie).not.toContain(second.body.token);
    const cookie = setCookie.split(";")[0]!;

    const withCookie = await anonymous("GET", `${QUEUES}/api/queues`, undefined, { cookie });
    expect(withCookie.status).toBe(200);
    expect(withCookie.body.queues).toHaveLength(2);
    expect((await anonymous("GET", `${QUEUES}/api/queues`, undefined, { cookie: "nahida_admin=forged-or-expired" })).status).toBe(401);
    // The cookie is for the dashboard only, never the API.
    expect((await anonymous("GET", "/api/tokens", undefined, { cookie })).status).toBe(401);

    expect((await admin("DELETE", `/api/tokens/${second.body.id}`)).status).toBe(200);
    const revoked = await anonymous("GET", `${QUEUES}/api/queues`, undefined, { cookie });
    expect(revoked.status).toBe(401);
    expect(revoked.body.error.message).toBe("invalid or revoked token");

    const badForm = await fetch(`${base}${QUEUES}/session`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "token=wrong-token-wrong-token",
    });
    expect(badForm.status).toBe(401);
    expect(badForm.headers.get("set-cookie")).toBeNull();
  });
});
