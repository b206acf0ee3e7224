import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { spawnGatewayReplica, startHarness, type Harness } from "../support/nahida-harness";
import { waitFor } from "../support/infra";
import { deliveriesTo, ledgerSettled } from "../support/ledger";
import type { SpawnedProcess } from "../support/processes";
import { TOKEN_CACHE_MS } from "@nahida/gateway";
import { apiClient } from "./api-client";

const ADMIN = "test-admin-token-replicas-0123456789";

describe("Idempotency-Key across two gateway processes", () => {
  let h: Harness;
  let second: SpawnedProcess;
  let secondBase: string;
  beforeAll(async () => {
    h = await startHarness("api_replicas", { NAHIDA_API_TOKEN: ADMIN });
    const replica = await spawnGatewayReplica(h, ADMIN);
    second = replica.process;
    secondBase = replica.base;
  });
  afterAll(async () => {
    second?.kill("SIGTERM");
    await second?.exited;
    await h?.close();
  });

  it("yields one delivery and one Telegram message for 20 concurrent requests with the same key", async () => {
    const clients = [apiClient(h.nahida.gatewayAddress!, ADMIN), apiClient(secondBase, ADMIN)];
    const body = { target: "telegram:private:710000001", text: "alert: disk at 91%" };
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => clients[i % 2]!("POST", "/api/send", body, { "idempotency-key": "alert-disk-91" })),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(202));
    const ids = new Set(responses.map((r) => r.body.delivery_id));
    expect(ids.size).toBe(1);

    await waitFor(async () => h.telegram.sent(710000001).length === 1, 10_000, "the message");
    await ledgerSettled(h.databaseUrl);
    expect(await deliveriesTo(h.databaseUrl, "telegram:private:710000001")).toEqual({ sent: 1 });
    expect(h.telegram.sent(710000001)).toHaveLength(1);
    const db = new pg.Client({ connectionString: h.databaseUrl });
    await db.connect();
    try {
      const rows = await db.query("SELECT count(*)::int AS n FROM deliveries WHERE target = $1", [body.target]);
      expect(rows.rows[0].n).toBe(1);
    } finally {
      await db.end();
    }
  });

  it("stops accepting a token revoked through one replica on the other within the token cache time", async () => {
    const admin = apiClient(h.nahida.gatewayAddress!, ADMIN);
    const created = await admin("POST", "/api/tokens", { name: "short-lived", scopes: ["read"] });
    const onSecond = apiClient(secondBase, created.body.token);
    // A token created on one replica works on the other at once (misses are never cached).
    expect((await onSecond("GET", "/api/sessions")).status).toBe(200);
    const onFirst = apiClient(h.nahida.gatewayAddress!, created.body.token);
    expect((await onFirst("GET", "/api/sessions")).status).toBe(200);
    await admin("DELETE", `/api/tokens/${created.body.id}`);
    const revokedAt = Date.now();
    // On the replica that revoked it: at once, though it had the token cached.
    expect((await onFirst("GET", "/api/sessions")).status).toBe(401);
    await waitFor(async () => (await onSecond("GET", "/api/sessions")).status === 401, 10_000, "the other replica to refuse it", 100);
    expect(Date.now() - revokedAt).toBeLessThan(TOKEN_CACHE_MS + 1_000);
  });
});
