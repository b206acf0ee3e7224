import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeMilky, type FakeMilky } from "../fakes/milky.fake";
import { apiClient } from "../gateway/api-client";
import { pushPrivateText, startDeployment, type Deployment } from "../support/deployment";
import { expectAnsweredOnceThroughKill } from "../support/failover-traffic";
import { waitFor } from "../support/infra";
import { ledgerSettled } from "../support/ledger";
import { freePort } from "../support/ports";
import { startRedisCluster, type RedisClusterGroup } from "../support/redis-cluster";

// A Redis Cluster of three masters with a replica each, REDIS_CLUSTER_NODES in place of
// REDIS_URL: the conversation path, /api/send, a cron fire and the Telegram and Milky
// leaderships run on it, each of their keys in the one slot of the queue prefix's hash tag
// (a command whose keys span slots would be refused: CROSSSLOT). Then that slot's master is
// SIGKILLed mid-traffic and its replica promoted: every message is still answered, once.

const ADMIN_TOKEN = "redis-cluster-admin-token-0123456789abcdef";
const MILKY_TOKEN = "redis-cluster-milky-token";
const FIXTURES_DIR = fileURLToPath(new URL("../fixtures/milky/", import.meta.url));
const friendText = JSON.parse(readFileSync(`${FIXTURES_DIR}friend-text.json`, "utf8")) as Record<string, any>;

describe("on a Redis Cluster", () => {
  let cluster: RedisClusterGroup;
  let milky: FakeMilky;
  let d: Deployment;
  let gateway: string;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    milky = await startFakeMilky({ accessToken: MILKY_TOKEN });
    d = await startDeployment(
      "cluster",
      ["ingress-telegram", "ingress-milky", "ingress-milky", "agent-worker", "delivery", "scheduler"],
      { NAHIDA_API_TOKEN: ADMIN_TOKEN, SCHEDULER_MIN_INTERVAL_MS: "1000", NAHIDA_LEASE_MS: "3000", MILKY_BASE_URL: milky.baseUrl, MILKY_ACCESS_TOKEN: MILKY_TOKEN },
      { redis: cluster },
    );
    const port = await freePort();
    await d.start("gateway", { GATEWAY_PORT: String(port) });
    gateway = `http://127.0.0.1:${port}`;
  }, 150_000);
  afterAll(async () => {
    try {
      await d?.close();
      await milky?.close();
    } finally {
      await cluster?.close();
    }
  });

  it("answers Telegram and Milky, sends through the API, fires a cron job and elects one leader per platform connection, every key in one slot", async () => {
    d.openai.onRequest(() => ({ content: "clustered and answering" }));
    pushPrivateText(d.telegram, 940001, "hello from telegram");
    await waitFor(async () => milky.eventClients().websocket === 1 || undefined, 20_000, "one Milky event connection");
    await milky.pushEvent({ ...friendText, data: { ...friendText.data, message_seq: 91_001, segments: [{ type: "text", data: { text: "hello from qq" } }] } });
    const api = apiClient(gateway, ADMIN_TOKEN);
    const sent = await api("POST", "/api/send", { target: "telegram:private:940002", text: "sent on a cluster" });
    expect(sent.status).toBe(202);
    const at = new Date(Date.now() + 2_000).toISOString();
    const cron = await api("POST", "/api/cron", { name: "once", schedule: { kind: "at", at }, delete_after_run: false, target: "telegram:private:940003", payload: { kind: "notify", text: "cron on a cluster" } });
    expect(cron.status).toBe(201);

    const texts = (chat: number) => d.telegram.sent(chat).map((c) => String(c.params.text));
    await waitFor(async () => [940001, 940002, 940003].every((chat) => texts(chat).length > 0) || undefined, 60_000, "all three Telegram chats to get their message");
    await waitFor(async () => milky.sent(friendText.data.peer_id).length > 0 || undefined, 30_000, "the QQ friend to get an answer");
    await waitFor(async () => ((await api("GET", `/api/cron/${cron.body.id}/runs`)).body.runs?.length ? true : undefined), 15_000, "the cron run to be recorded");
    await ledgerSettled(d.t.url, 30_000);
    expect(texts(940001)).toEqual(["clustered and answering"]);
    expect(texts(940002)).toEqual(["sent on a cluster"]);
    expect(texts(940003)).toEqual(["cron on a cluster"]);
    expect(milky.sent(friendText.data.peer_id)).toHaveLength(1);
    expect(milky.eventClients().websocket).toBe(1);

    // Every key the services wrote is in the prefix's slot, on its master, and nowhere else
    // (the cluster is this test's own: any key on it is theirs).
    const slotMaster = await cluster.masterOf(`${d.keyPrefix}:`);
    const keysOn = async (port: number) => {
      const client = new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: 0 });
      try {
        return await client.keys("*");
      } finally {
        client.disconnect();
      }
    };
    const ours = await keysOn(slotMaster.port);
    expect(ours.length).toBeGreaterThan(0);
    expect(ours.filter((key) => !key.startsWith(`${d.keyPrefix}:`))).toEqual([]);
    expect(ours.some((key) => key.startsWith(`${d.keyPrefix}:telegram:poller:`))).toBe(true);
    expect(ours.some((key) => key.startsWith(`${d.keyPrefix}:milky:event:`))).toBe(true);
    const others = (await cluster.masters()).filter((m) => m.port !== slotMaster.port);
    expect(others).toHaveLength(2);
    for (const other of others) expect(await keysOn(other.port), `keys on ${other.port}`).toEqual([]);
    const output = d.replicas.map((r) => r.proc.output()).join("\n");
    expect(output).not.toMatch(/CROSSSLOT/);
    expect(d.crashes).toEqual([]);
  }, 120_000);

  it("answers every message once after the master of the prefix's slot is killed and its replica promoted", async () => {
    const slot = `${d.keyPrefix}:`;
    await expectAnsweredOnceThroughKill(d, {
      label: "redis cluster failover (NAHIDA_LEASE_MS 3000, cluster-node-timeout 1000)",
      firstChat: 950_000_000,
      perSecond: 40,
      afterKillMs: 3_000,
      master: () => cluster.masterOf(slot),
      kill: () => cluster.killMasterOf(slot),
    });
    expect(d.crashes).toEqual([]);
  }, 240_000);
});
