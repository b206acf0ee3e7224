import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeMilky, type FakeMilky } from "../fakes/milky.fake";
import { waitFor } from "../support/infra";
import { startDeployment, type Deployment } from "../support/deployment";

// Two ingress-milky processes (the launcher's entry point, one service each) share one
// Milky account: one event connection. The holder is SIGKILLed; the other connects within
// the documented bound (lease TTL + a third of it), and every event pushed before, across
// and after the takeover is stored exactly once.

const TOKEN = "milky-takeover-token";
const LEASE_MS = 2_000;
const FIXTURES_DIR = fileURLToPath(new URL("../fixtures/milky/", import.meta.url));
const friendText = JSON.parse(readFileSync(`${FIXTURES_DIR}friend-text.json`, "utf8")) as Record<string, any>;

let nextSeq = 70_000;
const event = (text: string) => ({ ...friendText, data: { ...friendText.data, message_seq: ++nextSeq, segments: [{ type: "text", data: { text } }] } });

describe("a SIGKILLed holder of the Milky event connection", () => {
  let milky: FakeMilky;
  let d: Deployment;
  beforeAll(async () => {
    milky = await startFakeMilky({ accessToken: TOKEN });
    d = await startDeployment("milky_takeover", ["ingress-milky", "ingress-milky"], {
      MILKY_BASE_URL: milky.baseUrl,
      MILKY_ACCESS_TOKEN: TOKEN,
      NAHIDA_LEASE_MS: String(LEASE_MS),
    });
  }, 120_000);
  afterAll(async () => {
    await d?.close();
    await milky?.close();
  });

  const stored = async () => (await d.t.db.pool.query<{ text: string }>("SELECT message->'message'->>'text' AS text FROM inbound_messages")).rows.map((r) => r.text);

  it("is replaced within the lease bound, and no event is lost or stored twice", async () => {
    await waitFor(async () => milky.eventClients().websocket === 1, 15_000, "one event connection");
    let mostConnections = 0;
    const watch = setInterval(() => (mostConnections = Math.max(mostConnections, milky.eventClients().websocket)), 20);
    const pushed: string[] = [];
    const push = async (text: string) => {
      pushed.push(text);
      await milky.pushEvent(event(text));
    };
    try {
      for (let i = 0; i < 5; i++) await push(`before ${i}`);
      await waitFor(async () => ((await stored()).length === 5 ? true : undefined), 10_000, "the first events");

      const [key] = await d.redis.keys(`${d.prefix}:milky:event:*`);
      const holderPid = (await d.redis.get(key!))!.split(":")[1];
      const holder = d.replicas.find((r) => String(r.proc.pid) === holderPid)!;
      expect(holder).toBeDefined();
      holder.killed = true;
      holder.proc.kill("SIGKILL");
      const killedAt = Date.now();
      await holder.proc.exited;

      const pushing = (async () => {
        for (let i = 0; i < 20; i++) {
          await push(`across ${i}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      await waitFor(async () => (milky.eventClients().websocket === 1 && (await d.redis.get(key!))?.split(":")[1] !== holderPid ? true : undefined), 15_000, "the other replica to connect", 20);
      const takeoverMs = Date.now() - killedAt;
      await pushing;
      for (let i = 0; i < 3; i++) await push(`after ${i}`);
      await waitFor(async () => ((await stored()).length >= pushed.length ? true : undefined), 20_000, "every event to be stored");

      expect(takeoverMs).toBeLessThan(LEASE_MS + LEASE_MS / 3 + 1_500);
      const texts = await stored();
      expect([...texts].sort()).toEqual([...pushed].sort());
      expect(mostConnections).toBe(1);
      expect(d.crashes).toEqual([]);
      console.log(`milky takeover: SIGKILL → the other replica connected in ${takeoverMs} ms (lease ${LEASE_MS} ms); ${pushed.length} events, each stored once`);
    } finally {
      clearInterval(watch);
    }
  }, 90_000);
});
