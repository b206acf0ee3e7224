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

  it("refuses requests without an admin token, and sends a browser to the console's sign-in", async () => {
    const none = await anonymous("GET", `${QUEUES}/api/queues`);
    expect(none.status).toBe(401);
    expect(none.body.error).toEqual({ code: "unauthorized", message: "send Authorization: Bearer <admin token>, or sign in at /console" });
    const browser = await fetch(`${base}${QUEUES}`, { headers: { accept: "text/html" }, redirect: "manual" });
    expect(browser.status).toBe(303);
    expect(browser.headers.get("location")).toBe(`/console?next=${encodeURIComponent(QUEUES)}`);

    const reader = apiClient(base, readToken);
    for (const path of [QUEUES, `${QUEUES}/api/queues`, `${QUEUES}/api/queues/outbound/retry/failed`]) {
      const res = await reader(path.endsWith("failed") ? "PUT" : "GET", path);
      expect(res.status, path).toBe(403);
      expect(res.body.error.code, path).toBe("forbidden");
    }
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

  it("takes the console's sign-in (one sign-in for both), only for admin tokens and changes from its own page", async () => {
    const second = await admin("POST", "/api/tokens", { name: "ops-admin", scopes: ["admin"] });
    const signIn = await anonymous("POST", "/api/auth/session", { token: second.body.token });
    expect(signIn.status).toBe(201);
    const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;

    const withCookie = await anonymous("GET", `${QUEUES}/api/queues`, undefined, { cookie });
    expect(withCookie.status).toBe(200);
    expect(withCookie.body.queues).toHaveLength(2);
    // A change needs the dashboard's own origin (bull-board's page cannot send the CSRF header).
    const crossSite = await anonymous("PUT", `${QUEUES}/api/queues/outbound/pause`, undefined, { cookie, origin: "https://evil.example" });
    expect(crossSite.status).toBe(403);
    expect((await anonymous("PUT", `${QUEUES}/api/queues/outbound/pause`, undefined, { cookie })).status).toBe(403);
    // From its own page it reaches bull-board, which refuses changes while read-only.
    expect((await anonymous("PUT", `${QUEUES}/api/queues/outbound/pause`, undefined, { cookie, origin: base })).status).toBe(405);

    const reader = await anonymous("POST", "/api/auth/session", { token: readToken });
    const readerCookie = reader.headers.get("set-cookie")!.split(";")[0]!;
    expect((await anonymous("GET", `${QUEUES}/api/queues`, undefined, { cookie: readerCookie })).status).toBe(403);

    expect((await admin("DELETE", `/api/tokens/${second.body.id}`)).status).toBe(200);
    const revoked = await anonymous("GET", `${QUEUES}/api/queues`, undefined, { cookie });
    expect(revoked.status).toBe(401);
    expect(revoked.body.error.message).toBe("invalid or revoked token");
  });
});
