import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../gateway/api-client";
import { expectArrivalOrder } from "../support/arrival-order";
import { pushPrivateText, startDeployment, type Deployment, type Role } from "../support/deployment";
import { waitFor } from "../support/infra";
import { ledgerSettled } from "../support/ledger";
import { startPgBouncer, type PgBouncer } from "../support/pgbouncer";
import { freePort } from "../support/ports";

// Debian's PgBouncer 1.18 in transaction mode between every process and Postgres, with
// DATABASE_POOLER=transaction: each transaction may land on any of a few server
// connections, which keep no prepared statement and no session state for a client. The
// migrations go to Postgres directly (DATABASE_DIRECT_URL).

const ADMIN_TOKEN = "pgbouncer-deployment-admin-token-0123456789";
const SERVER_CONNECTIONS = 5;
const ROLES: Role[] = ["ingress-telegram", "agent-worker", "agent-worker", "delivery", "scheduler"];

describe("through PgBouncer 1.18 in transaction mode", () => {
  let bouncer: PgBouncer;
  let d: Deployment;
  let gateway: string;
  let database: string;

  beforeAll(async () => {
    bouncer = await startPgBouncer({ poolMode: "transaction", defaultPoolSize: SERVER_CONNECTIONS });
    d = await startDeployment(
      "pgbouncer",
      ROLES,
      { NAHIDA_API_TOKEN: ADMIN_TOKEN, SCHEDULER_MIN_INTERVAL_MS: "1000", NAHIDA_LEASE_MS: "3000", AGENT_HISTORY_TURNS: "4" },
      { transactionPooler: bouncer },
    );
    const port = await freePort();
    await d.start("gateway", { GATEWAY_PORT: String(port) });
    gateway = `http://127.0.0.1:${port}`;
    database = new URL(d.t.url).pathname.slice(1);
  }, 120_000);
  afterAll(async () => {
    await d?.close();
    await bouncer?.close();
  });

  it("answers a conversation, an /api/send and a cron fire, each once", async () => {
    d.openai.onRequest(() => ({ content: "pooled and answering" }));
    pushPrivateText(d.telegram, 920001, "hello through the pooler");
    const api = apiClient(gateway, ADMIN_TOKEN);
    const sent = await api("POST", "/api/send", { target: "telegram:private:920002", text: "sent through the pooler" });
    expect(sent.status).toBe(202);
    const at = new Date(Date.now() + 2_000).toISOString();
    const cron = await api("POST", "/api/cron", { name: "once", schedule: { kind: "at", at }, delete_after_run: false, target: "telegram:private:920003", payload: { kind: "notify", text: "cron through the pooler" } });
    expect(cron.status).toBe(201);

    const texts = (chat: number) => d.telegram.sent(chat).map((c) => String(c.params.text));
    await waitFor(async () => [920001, 920002, 920003].every((chat) => texts(chat).length > 0) || undefined, 60_000, "all three chats to get their message");
    const runs = await waitFor(async () => {
      const res = await api("GET", `/api/cron/${cron.body.id}/runs`);
      return res.body.runs?.length ? res.body.runs : undefined;
    }, 15_000, "the cron run to be recorded");
    expect(runs).toHaveLength(1);
    const delivery = await waitFor(async () => {
      const res = await api("GET", `/api/deliveries/${sent.body.delivery_id}`);
      return res.body.status === "sent" ? res.body : undefined;
    }, 15_000, "the API send to read sent");
    expect(delivery.attempts).toBe(1);
    // Nothing left to do before counting what came: no lane item open, no delivery unsent.
    await ledgerSettled(d.t.url);
    expect(texts(920001)).toEqual(["pooled and answering"]);
    expect(texts(920002)).toEqual(["sent through the pooler"]);
    expect(texts(920003)).toEqual(["cron through the pooler"]);
    expect(d.crashes).toEqual([]);
  }, 90_000);

  it("hands 600 messages over 40 chats to the model in each chat's arrival order, through a Redis wipe", async () => {
    d.openai.onRequest(() => ({ content: "ok" }));
    const before = await bouncer.stats(database);
    await expectArrivalOrder(d, { messages: 600, chats: 40, firstChat: 780_000_000 });
    expect(d.crashes).toEqual([]);
    // It went through the pooler: thousands of transactions over a few server connections.
    const after = await waitFor(async () => {
      const stats = await bouncer.stats(database);
      return stats.transactions - before.transactions >= 600 ? stats : undefined;
    }, 5_000, "PgBouncer's statistics to count the burst");
    expect(after.transactions - before.transactions).toBeGreaterThanOrEqual(600);
    // Many pooled clients, few server connections: transactions of different clients shared them.
    const { clients, servers } = await bouncer.connections(database);
    expect(clients).toBeGreaterThan(2 * servers);
    // The statements ran unprepared: a named one would have met a server connection that lacks it.
    expect(d.replicas.map((r) => r.proc.output()).join("\n")).not.toMatch(/prepared statement/i);
  }, 240_000);

  it("refuses to start when the pooler's sessions do not keep time in UTC, naming the fix", async () => {
    const berlin = await startPgBouncer({ poolMode: "transaction", timezone: "Europe/Berlin" });
    try {
      const started = d.start("agent-worker", { DATABASE_URL: berlin.urlOf(d.t.url) });
      await expect(started).rejects.toThrow(/DATABASE_URL: the sessions keep time in Europe\/Berlin, not UTC: behind PgBouncer set timezone=UTC/);
    } finally {
      await berlin.close();
    }
  }, 60_000);
});
