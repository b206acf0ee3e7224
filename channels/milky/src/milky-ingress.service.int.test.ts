import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import type { Redis } from "ioredis";
import { ChannelStartError } from "@nahida/channels";
import { startIntakeHarness, type IntakeHarness } from "../../../libs/ingress/src/intake-harness";
import { createRedis } from "@nahida/queue";
import { startFakeMilky, type FakeMilky } from "../../../test/fakes/milky.fake";
import { TEST_REDIS_URL, clearQueuePrefix, testQueuePrefix, waitFor } from "../../../test/support/infra";
import { freePort } from "../../../test/support/ports";
import { SseParser } from "./milky-event-stream";
import { startMilkyIngress, type MilkyIngressOptions, type RunningMilkyIngress } from "./milky-ingress.service";

const TOKEN = "milky-ingress-test-token";
const SELF_ID = 3000000001;
const FIXTURES_DIR = fileURLToPath(new URL("../../../test/fixtures/milky/", import.meta.url));
const fixture = (name: string) => JSON.parse(readFileSync(`${FIXTURES_DIR}${name}.json`, "utf8")) as Record<string, unknown>;

let nextSeq = 7000;
/** A friend text from 小明 with a fresh message_seq. */
function friendText(text: string, peerId = 10001) {
  const base = fixture("friend-text");
  const data = base.data as Record<string, unknown>;
  return { ...base, data: { ...data, peer_id: peerId, sender_id: peerId, message_seq: ++nextSeq, segments: [{ type: "text", data: { text } }] } };
}

describe("Milky ingress", () => {
  let h: IntakeHarness;
  let redis: Redis;
  let prefix: string;
  const running: RunningMilkyIngress[] = [];
  const logger = pino({ level: "silent" });

  beforeAll(async () => {
    h = await startIntakeHarness("milky_ingress");
    redis = createRedis({ url: TEST_REDIS_URL });
    prefix = testQueuePrefix("milky_ingress");
  }, 60_000);
  afterAll(async () => {
    for (const r of running) await r.stop();
    redis?.disconnect();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await h?.close();
  });

  async function start(milky: FakeMilky, options: Partial<MilkyIngressOptions>) {
    const ingress = await startMilkyIngress({ intake: h.intake, baseUrl: milky.baseUrl, accessToken: TOKEN, transport: "websocket", redis, prefix: `${prefix}:${running.length}`, logger, leaderTtlMs: 1_500, ...options });
    running.push(ingress);
    return ingress;
  }
  const texts = async () => (await h.t.db.pool.query<{ text: string }>("SELECT message->'message'->>'text' AS text FROM inbound_messages ORDER BY received_at, id")).rows.map((r) => r.text);

  it.each(["websocket", "sse"] as const)("stores events pushed over %s, in order, once each", async (transport) => {
    const milky = await startFakeMilky({ accessToken: TOKEN });
    try {
      const ingress = await start(milky, { transport });
      expect(ingress.selfId).toBe(SELF_ID);
      await waitFor(async () => milky.eventClients()[transport === "websocket" ? "websocket" : "sse"] === 1, 5_000, "the event connection");
      const words = [`${transport} one`, `${transport} two`, `${transport} three`];
      for (const word of words) await milky.pushEvent(friendText(word));
      await milky.pushEvent(fixture("unknown-event"));
      await waitFor(async () => (await texts()).includes(words[2]!), 5_000, "the third event");
      expect((await texts()).filter((t) => t.startsWith(transport))).toEqual(words);
      await ingress.stop();
      await waitFor(async () => milky.eventClients().websocket + milky.eventClients().sse === 0, 2_000, "the connection to close");
    } finally {
      await milky.close();
    }
  });

  it("reconnects after the implementation drops the connection and backfills what was pushed meanwhile, without doubling", async () => {
    const milky = await startFakeMilky({ accessToken: TOKEN });
    try {
      await start(milky, { transport: "websocket" });
      await waitFor(async () => milky.eventClients().websocket === 1, 5_000, "the event connection");
      await milky.pushEvent(friendText("before the drop", 10021));
      await waitFor(async () => (await texts()).includes("before the drop"), 5_000, "the first event");
      milky.dropEventClients();
      // Pushed while nobody is connected: the protocol never sends it again.
      await milky.pushEvent(friendText("during the gap", 10021));
      await waitFor(async () => milky.eventConnectionsAccepted >= 2, 10_000, "the reconnect");
      await waitFor(async () => (await texts()).includes("during the gap"), 5_000, "the backfilled event");
      await milky.pushEvent(friendText("after the reconnect", 10021));
      await waitFor(async () => (await texts()).includes("after the reconnect"), 5_000, "the live event");
      expect((await texts()).filter((t) => ["before the drop", "during the gap", "after the reconnect"].includes(t))).toEqual(["before the drop", "during the gap", "after the reconnect"]);
      expect(milky.callsTo("get_history_messages").length).toBeGreaterThanOrEqual(1);
    } finally {
      await milky.close();
    }
  });

  /** Drops the connection and pushes `count` messages to one chat while nobody is connected; resolves with their texts. */
  async function pushDuringGap(milky: FakeMilky, label: string, peer: number, count: number): Promise<string[]> {
    await waitFor(async () => milky.eventClients().websocket === 1, 5_000, "the event connection");
    await milky.pushEvent(friendText(`${label} before`, peer));
    await waitFor(async () => (await texts()).includes(`${label} before`), 5_000, "the first event");
    milky.dropEventClients();
    const words = Array.from({ length: count }, (_, i) => `${label} gap ${i}`);
    // The reconnect waits at least 500 ms; these take a few.
    for (const word of words) await milky.pushEvent(friendText(word, peer));
    return words;
  }

  it("catches up a gap longer than one history page, paging back with start_message_seq, oldest first, once each", async () => {
    const milky = await startFakeMilky({ accessToken: TOKEN });
    try {
      await start(milky, { transport: "websocket" });
      const words = await pushDuringGap(milky, "paged", 10031, 45);
      await waitFor(async () => (await texts()).includes(words.at(-1)!), 10_000, "the whole gap");
      await milky.pushEvent(friendText("paged after", 10031));
      await waitFor(async () => (await texts()).includes("paged after"), 5_000, "the live event");
      expect((await texts()).filter((t) => t.startsWith("paged "))).toEqual(["paged before", ...words, "paged after"]);
      const pages = milky.callsTo("get_history_messages").filter((c) => c.body.peer_id === 10031);
      expect(pages.length).toBeGreaterThanOrEqual(2);
      expect(pages[1]!.body.start_message_seq).toEqual(expect.any(Number));
    } finally {
      await milky.close();
    }
  });

  it("stops at the page cap with a warning, keeping the newest pages", async () => {
    const milky = await startFakeMilky({ accessToken: TOKEN });
    const warnings: string[] = [];
    const capturing = pino({ level: "warn" }, { write: (line: string) => void warnings.push(line) });
    try {
      await start(milky, { transport: "websocket", logger: capturing, eventStream: { timings: { catchUpMaxPages: 1 } } });
      const words = await pushDuringGap(milky, "capped", 10032, 45);
      await waitFor(async () => (await texts()).includes(words.at(-1)!), 10_000, "the newest page");
      await waitFor(async () => warnings.some((w) => w.includes("page cap")), 5_000, "the warning");
      expect((await texts()).filter((t) => t.startsWith("capped gap"))).toEqual(words.slice(-30));
    } finally {
      await milky.close();
    }
  });

  it("keeps a chat's gap open when its catch-up fails, though live events move on, and fills it on the retry", async () => {
    const milky = await startFakeMilky({ accessToken: TOKEN });
    try {
      await start(milky, { transport: "websocket", eventStream: { timings: { catchUpRetryMs: 300 } } });
      // The first history call is the reconnect's: the first connection had no recent chats.
      milky.failNext("get_history_messages", { status: 502 });
      const [missed] = await pushDuringGap(milky, "retried", 10033, 1);
      await waitFor(async () => milky.eventConnectionsAccepted >= 2 && milky.callsTo("get_history_messages").length >= 1, 10_000, "the reconnect's catch-up");
      await milky.pushEvent(friendText("retried live", 10033));
      await waitFor(async () => (await texts()).includes("retried live"), 5_000, "the live event");
      await waitFor(async () => (await texts()).includes(missed!), 5_000, "the retried catch-up");
      expect((await texts()).filter((t) => t === missed)).toHaveLength(1);
    } finally {
      await milky.close();
    }
  });

  it("backs off against a server that hangs up right after every handshake", async () => {
    const milky = await startFakeMilky({ accessToken: TOKEN });
    try {
      milky.closeEventConnectionsOnOpen(true);
      await start(milky, { transport: "sse" });
      await new Promise((r) => setTimeout(r, 4_000));
      const connections = milky.eventConnectionsAccepted;
      // 0, 0.5, 1.5, 3.5 s: back-off doubling from 500 ms. Resetting it at every open would make about eight.
      expect(connections).toBeGreaterThanOrEqual(3);
      expect(connections).toBeLessThanOrEqual(5);
    } finally {
      await milky.close();
    }
  });

  it("reopens an SSE stream that went quiet and catches up what it missed", async () => {
    const milky = await startFakeMilky({ accessToken: TOKEN });
    try {
      await start(milky, { transport: "sse", eventStream: { timings: { sseIdleTimeoutMs: 800 } } });
      await waitFor(async () => milky.eventClients().sse === 1, 5_000, "the event stream");
      await milky.pushEvent(friendText("quiet before", 10034));
      await waitFor(async () => (await texts()).includes("quiet before"), 5_000, "the first event");
      // Half-open: the socket stays up and nothing arrives any more.
      milky.stallEventClients();
      const accepted = milky.eventConnectionsAccepted;
      await milky.pushEvent(friendText("quiet missed", 10034));
      await waitFor(async () => milky.eventConnectionsAccepted > accepted, 5_000, "the stream to be reopened");
      await waitFor(async () => (await texts()).includes("quiet missed"), 5_000, "the caught-up event");
    } finally {
      await milky.close();
    }
  });

  it("refuses to start with a token the implementation refuses, naming ACCESS_TOKEN", async () => {
    const milky = await startFakeMilky({ accessToken: TOKEN });
    try {
      const error = await startMilkyIngress({ intake: h.intake, baseUrl: milky.baseUrl, accessToken: "refused-token-canary", transport: "websocket", redis, prefix, logger }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ChannelStartError);
      expect(error).toMatchObject({ variable: "ACCESS_TOKEN" });
      expect((error as Error).message).not.toContain("refused-token-canary");
    } finally {
      await milky.close();
    }
  });

  describe("webhook", () => {
    let milky: FakeMilky;
    let url: string;
    beforeAll(async () => {
      const port = await freePort();
      url = `http://127.0.0.1:${port}/milky/webhook`;
      milky = await startFakeMilky({ accessToken: TOKEN, webhookUrls: [url] });
      await start(milky, { transport: "webhook", webhook: { host: "127.0.0.1", port, bodyLimitBytes: 64 * 1024 } });
    });
    afterAll(async () => {
      await milky?.close();
    });
    const post = (body: string, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
      fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });

    it("stores a pushed event before answering, and a retried push once", async () => {
      const event = friendText("through the webhook");
      expect(await milky.pushEvent(event)).toEqual([200]);
      expect(await texts()).toContain("through the webhook");
      expect(await milky.pushEvent(event)).toEqual([200]);
      expect((await texts()).filter((t) => t === "through the webhook")).toHaveLength(1);
    });

    it.each([
      ["no token", {}, 401],
      ["a wrong token", { authorization: "Bearer nope" }, 401],
    ])("answers %s with the right status and stores nothing", async (_label, headers, status) => {
      const before = (await texts()).length;
      const response = await post(JSON.stringify(friendText("should not be stored")), headers);
      expect(response.status).toBe(status);
      expect((await response.json()) as unknown).toMatchObject({ error: { code: "unauthorized" } });
      expect((await texts()).length).toBe(before);
    });

    it.each([
      ["malformed JSON", "{not json", 400],
      ["an array", "[]", 400],
      ["an object without event_type", '{"data":{}}', 400],
      ["an oversize body", JSON.stringify(friendText("x".repeat(80 * 1024))), 413],
      ["a body nested 20,000 deep", `{"event_type":"message_receive","data":${"[".repeat(20_000)}${"]".repeat(20_000)}}`, 400],
    ])("answers %s with the right status and stores nothing", async (_label, body, status) => {
      const before = (await texts()).length;
      const response = await post(body);
      expect(response.status).toBe(status);
      expect((await response.json()) as { error: { message: string } }).toMatchObject({ error: { message: expect.any(String) } });
      expect((await texts()).length).toBe(before);
    });

    it("acknowledges an event it ignores", async () => {
      expect(await milky.pushEvent(fixture("unknown-event"))).toEqual([200]);
    });
  });
});

describe("SseParser", () => {
  it("joins data lines into events at blank lines, across chunks and line endings, and reads past the rest", () => {
    const events: string[] = [];
    const parser = new SseParser((data) => events.push(data));
    for (const chunk of [": hello\n\nevent: milky_event\nda", "ta: {\"a\":1}\r", "\n\r\ndata: line one\ndata:line two\nid: 7\nretry: 100\n\n", "data: unfinished"]) parser.push(chunk);
    expect(events).toEqual(['{"a":1}', "line one\nline two"]);
  });
});
