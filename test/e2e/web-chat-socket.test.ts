import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerFrame } from "@nahida/channel-web";
import { TEST_REDIS_URL } from "../support/infra";
import { ledgerSettled } from "../support/ledger";
import { startHarness, type Harness } from "../support/nahida-harness";
import { ChatSocket, TEST_WEB_SECRET, echoModel, lastUserText } from "../support/web-chat";

const RATE = 5;
const isAck = (id: string) => (f: ServerFrame) => f.type === "ack" && f.id === id;
const isError = (id?: string) => (f: ServerFrame): f is Extract<ServerFrame, { type: "error" }> => f.type === "error" && f.id === id;
const botSaid = (text: string) => (f: ServerFrame) => f.type === "message" && f.item.from === "bot" && f.item.text === text;

describe("the web chat's socket", () => {
  let h: Harness;
  let db: pg.Pool;
  let base: string;
  const sockets: ChatSocket[] = [];
  const track = (s: ChatSocket) => (sockets.push(s), s);

  beforeAll(async () => {
    h = await startHarness("web-chat-socket", {
      WEB_SECRET: TEST_WEB_SECRET,
      WEB_ANONYMOUS: "true",
      WEB_RATE_PER_MINUTE: String(RATE),
      WEB_ORIGINS: "https://shop.example.com",
    });
    echoModel(h.openai);
    base = h.nahida.gatewayAddress!;
    db = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
  });
  afterAll(async () => {
    for (const s of sockets) s.close();
    await db?.end();
    await h?.close();
  });

  const count = async (sql: string, ...params: unknown[]) => (await db.query<{ n: number }>(sql, params)).rows[0]!.n;

  it("refuses a socket from another site's page, and takes one from an allowed embedding site or its own host behind a TLS proxy", async () => {
    await expect(ChatSocket.open(base, { origin: "https://evil.example" })).rejects.toThrow("upgrade refused: 403");
    // The browser saw https://<host>; the gateway behind the proxy sees http.
    const proxied = track(await ChatSocket.open(base, { origin: base.replace("http://", "https://") }));
    proxied.send({ type: "hello", token: "x" });
    expect(await proxied.next(isError())).toMatchObject({ code: "unauthorized" });
    const embedded = track(await ChatSocket.open(base, { origin: "https://shop.example.com" }));
    embedded.send({ type: "hello", token: "not-a-token" });
    expect(await embedded.next(isError())).toMatchObject({ code: "unauthorized" });
    expect((await embedded.closedWith()).code).toBe(4401);
  });

  it("answers a message resent with the same id once, acknowledging both", async () => {
    const s = track(await ChatSocket.visitor(base, "dora", { name: "Dora" }));
    s.send({ type: "message", id: "dora-message-0001", text: "first question" });
    await s.next(isAck("dora-message-0001"));
    await s.next(botSaid("echo: first question"));
    // A page that reconnected before it saw the ack sends it again.
    s.send({ type: "message", id: "dora-message-0001", text: "first question" });
    await waitForAcks(s, "dora-message-0001", 2);
    await ledgerSettled(h.databaseUrl);
    expect(await count("SELECT count(*)::int AS n FROM inbound_messages WHERE chat_address = 'web:private:dora'")).toBe(1);
    expect(await count("SELECT count(*)::int AS n FROM deliveries WHERE target = 'web:private:dora'")).toBe(1);
    expect(h.openai.requests.filter((r) => lastUserText(r) === "first question")).toHaveLength(1);
    expect(s.frames.filter(botSaid("echo: first question"))).toHaveLength(1);
  });

  it("answers bad frames with an error, stores nothing and keeps the socket open", async () => {
    const s = track(await ChatSocket.visitor(base, "fuzzy"));
    const bad: (string | Buffer)[] = [
      "not json",
      Buffer.from([0xde, 0xad]),
      JSON.stringify({ type: "message", id: "short", text: "x" }),
      JSON.stringify({ type: "message", id: "fuzzy-message-01", text: "x".repeat(4_001) }),
      JSON.stringify({ type: "message", id: "fuzzy-message-02", text: "" }),
      JSON.stringify({ type: "message", id: "fuzzy-message-03", text: "x", extra: true }),
      JSON.stringify({ type: "subscribe", chat: "web:private:dora" }),
      JSON.stringify({ type: "hello", token: "again" }),
    ];
    for (const frame of bad) s.send(frame);
    await until(() => s.frames.filter((f) => f.type === "error").length >= bad.length);
    expect(s.frames.filter((f) => f.type === "error").map((f) => (f as { code: string }).code)).toEqual(Array(bad.length).fill("bad_frame"));
    s.send({ type: "message", id: "fuzzy-message-04", text: "still here" });
    await s.next(isAck("fuzzy-message-04"));
    await ledgerSettled(h.databaseUrl);
    expect(await count("SELECT count(*)::int AS n FROM inbound_messages WHERE chat_address = 'web:private:fuzzy'")).toBe(1);
  });

  it("closes a socket that sends a frame above the limit, and the gateway goes on", async () => {
    const s = track(await ChatSocket.visitor(base, "huge"));
    s.send(JSON.stringify({ type: "message", id: "huge-message-001", text: "x".repeat(70_000) }));
    expect((await s.closedWith()).code).toBe(1009);
    const after = track(await ChatSocket.visitor(base, "huge"));
    expect(after.frames.some((f) => f.type === "ready")).toBe(true);
  });

  it("limits each visitor's messages per minute, across sockets, storing only those within it", async () => {
    const a = track(await ChatSocket.visitor(base, "rapid"));
    const b = track(await ChatSocket.visitor(base, "rapid"));
    const ids = Array.from({ length: RATE + 2 }, (_, i) => `rapid-message-${String(i).padStart(3, "0")}`);
    for (const [i, id] of ids.entries()) (i % 2 === 0 ? a : b).send({ type: "message", id, text: `n${i}` });
    const outcomes = await Promise.all(ids.map((id, i) => (i % 2 === 0 ? a : b).next((f) => (f.type === "ack" || f.type === "error") && f.id === id)));
    const limited = outcomes.filter((f): f is Extract<ServerFrame, { type: "error" }> => f.type === "error");
    // The window is a clock minute: a test that straddles its end may see one fewer refusal.
    expect(limited.length).toBeGreaterThanOrEqual(1);
    expect(limited.length).toBeLessThanOrEqual(2);
    for (const error of limited) {
      expect(error.code).toBe("rate_limited");
      expect(error.retryAfterSeconds).toBeGreaterThan(0);
    }
    await ledgerSettled(h.databaseUrl);
    expect(await count("SELECT count(*)::int AS n FROM inbound_messages WHERE chat_address = 'web:private:rapid'")).toBe(ids.length - limited.length);
  });

  it("lets the visitors of a room see each other's messages and the bot's answer, in a group chat", async () => {
    const kai = track(await ChatSocket.visitor(base, "kai", { name: "Kai", room: "lobby" }));
    const lena = track(await ChatSocket.visitor(base, "lena", { name: "Lena", room: "lobby" }));
    expect(kai.frames.find((f) => f.type === "ready")).toMatchObject({ chat: "web:group:lobby" });
    kai.send({ type: "message", id: "kai-message-0001", text: "hello room" });
    const seen = await lena.next((f): f is Extract<ServerFrame, { type: "message" }> => f.type === "message" && f.item.from === "visitor");
    const kaiKey = (kai.frames.find((f) => f.type === "ready") as Extract<ServerFrame, { type: "ready" }>).visitor.key;
    // The room sees an opaque key, never the visitor's id (an operator's customer id).
    expect(seen.item).toMatchObject({ id: `${kaiKey}:kai-message-0001`, sender: { key: kaiKey, name: "Kai" }, text: "hello room" });
    expect(JSON.stringify(lena.frames)).not.toContain('"kai"');
    await kai.next(botSaid("echo: hello room"));
    await lena.next(botSaid("echo: hello room"));
    // Reusing another member's message id neither hides that message nor is taken for it.
    lena.send({ type: "message", id: "kai-message-0001", text: "same id, other visitor" });
    const lenas = await kai.next((f) => f.type === "message" && f.item.text === "same id, other visitor");
    expect((lenas as Extract<ServerFrame, { type: "message" }>).item.id).not.toBe(seen.item.id);
  });

  it("closes a socket that floods frames faster than they are handled", async () => {
    const s = track(await ChatSocket.visitor(base, "flood"));
    for (let i = 0; i < 200; i++) s.send({ type: "message", id: `flood-message-${String(i).padStart(4, "0")}`, text: "x" });
    expect((await s.closedWith()).code).toBe(1008);
  });

  it("sends every page back to reconnect (1012, then the history) when this replica's subscription to Redis was cut", async () => {
    const s = track(await ChatSocket.visitor(base, "cut"));
    const admin = new Redis(TEST_REDIS_URL);
    try {
      const clients = (await admin.client("LIST")) as string;
      // This process's harness (its connections are named with the pid): other test files share the Redis.
      const subscriber = clients.split("\n").find((line) => line.includes(`name=nahida:webchat-web:`) && line.includes(`:${process.pid}:`));
      expect(subscriber, "the web chat's subscriber connection").toBeDefined();
      await admin.client("KILL", "ID", /id=(\d+)/.exec(subscriber!)![1]!);
    } finally {
      admin.disconnect();
    }
    expect((await s.closedWith()).code).toBe(1012);
  });

  it("knows an anonymous visitor by the cookie the page set, and refuses a forged one", async () => {
    const page = await fetch(`${base}/chat`);
    const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
    expect(page.headers.get("set-cookie")).toMatch(/HttpOnly; SameSite=Lax/);
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    const anon = track(await ChatSocket.open(base, { cookie }));
    anon.send({ type: "hello" });
    const ready = await anon.next((f): f is Extract<ServerFrame, { type: "ready" }> => f.type === "ready");
    expect(ready.visitor.id).toMatch(/^anon-[A-Za-z0-9_-]{16}$/);
    expect(ready.chat).toBe(`web:private:${ready.visitor.id}`);

    const forged = track(await ChatSocket.open(base, { cookie: cookie.replace(/\.[^.]+$/, ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA") }));
    forged.send({ type: "hello" });
    expect((await forged.closedWith()).code).toBe(4401);
  });

  async function waitForAcks(s: ChatSocket, id: string, n: number) {
    await until(() => s.frames.filter(isAck(id)).length >= n);
  }
});

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 10));
  }
}
