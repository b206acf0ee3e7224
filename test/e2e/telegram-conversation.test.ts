import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { sentTo, startHarness, type Harness } from "../support/nahida-harness";
import { waitFor } from "../support/infra";
import { fixture, groupText, privateText } from "./telegram-fixtures";

const settle = (ms = 800) => new Promise((r) => setTimeout(r, ms));

describe("Telegram conversation end to end (polling)", () => {
  let h: Harness;
  let db: pg.Pool;
  beforeAll(async () => {
    h = await startHarness("e2e_polling");
    db = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
  });
  afterAll(async () => {
    await db?.end();
    await h?.close();
  });

  it("answers a private message once, persists both turns, and replays the first exchange identically", async () => {
    h.openai.enqueue({ content: "Hello Alice! I can chat and run tools." });
    h.telegram.pushUpdate(fixture("private-text"));
    const [first] = await sentTo(h, 123456789, 1);
    expect(first!.method).toBe("sendMessage");
    expect(first!.params.text).toBe("Hello Alice! I can chat and run tools.");
    // Private answers do not quote the user's message.
    expect(first!.params.reply_parameters).toBeUndefined();
    // The model answered at once: no "typing…" was worth showing.
    expect(h.telegram.callsTo("sendChatAction")).toEqual([]);

    const turns = await db.query(
      `SELECT t.role, t.content, t.metadata FROM turns t JOIN chats c ON c.current_session_id = t.session_id
        WHERE c.address = 'telegram:private:123456789' ORDER BY t.seq`,
    );
    expect(turns.rows.map((r) => [r.role, r.content])).toEqual([
      ["user", "Hi! What can you do?"],
      ["assistant", "Hello Alice! I can chat and run tools."],
    ]);
    expect(turns.rows[0].metadata.message_context).toEqual({
      timestamp: "2026-05-10T08:03:00.000Z",
      channel: "telegram",
      chatType: "private",
      chatDisplayName: "Alice Liddell",
      senderLabel: "Alice",
      roles: [],
    });

    h.openai.enqueue({ content: "Sure." });
    h.telegram.pushUpdate(privateText(123456789, "And tell me more"));
    await sentTo(h, 123456789, 2);
    const [req1, req2] = h.openai.requests.slice(-2).map((r) => r.body.messages as { role: string; content: string }[]);
    const firstUser = "[2026-05-10 16:03 +08 | telegram/private | Alice]\nHi! What can you do?";
    expect(req1!.filter((m) => m.role === "user").map((m) => m.content)).toEqual([firstUser]);
    expect(req2!.slice(1).map((m) => [m.role, m.content])).toEqual([
      ["user", firstUser],
      ["assistant", "Hello Alice! I can chat and run tools."],
      ["user", "[2026-05-10 16:03 +08 | telegram/private | Alice]\nAnd tell me more"],
    ]);
    expect(req2![0]!.role).toBe("system");
  });

  it("answers a mention and /status@bot in a group with reply_to, keeps a forum thread, ignores unaddressed chatter", async () => {
    const llmBefore = h.openai.requests.length;
    h.openai.enqueue({ content: "The last alert was a disk warning." });
    h.telegram.pushUpdate(fixture("group-mention"));
    const [mention] = await sentTo(h, -1001987654321, 1);
    expect(mention!.params.text).toBe("The last alert was a disk warning.");
    expect(mention!.params.reply_parameters).toMatchObject({ message_id: 903 });
    expect(h.openai.requests.length).toBe(llmBefore + 1);

    h.telegram.pushUpdate(fixture("group-command-with-botname"));
    const [, status] = await sentTo(h, -1001987654321, 2);
    expect(status!.params.text).toMatch(/^Session [0-9a-f]{8} · \d+ turns/);
    expect(status!.params.reply_parameters).toMatchObject({ message_id: 902 });
    expect(h.openai.requests.length).toBe(llmBefore + 1);

    h.openai.enqueue({ content: "Error rate is 0.1%." });
    h.telegram.pushUpdate(fixture("forum-topic-reply"));
    const [topic] = await sentTo(h, -1001555000333, 1);
    expect(topic!.params.message_thread_id).toBe(42);
    expect(topic!.params.reply_parameters).toMatchObject({ message_id: 1204 });

    h.telegram.pushUpdate(groupText(-1001987654321, "just chatting among ourselves"));
    await waitFor(async () => {
      const r = await db.query("SELECT 1 FROM inbound_messages WHERE message->'message'->>'text' = 'just chatting among ourselves'");
      return r.rowCount === 1;
    }, 10_000, "the unaddressed message to be stored");
    await settle();
    expect(h.openai.requests.length).toBe(llmBefore + 2);
    expect(h.telegram.sent(-1001987654321).length).toBe(2);
  });

  it("never sends commands to the LLM, honours NO_REPLY, and strips a trailing NO_REPLY line", async () => {
    const chat = 200000001;
    const before = h.openai.requests.length;
    h.telegram.pushUpdate(privateText(chat, "/help"));
    const [help] = await sentTo(h, chat, 1);
    expect(help!.params.text).toContain("/status");
    expect(h.openai.requests.length).toBe(before);

    h.openai.enqueue({ content: "NO_REPLY" });
    h.telegram.pushUpdate(privateText(chat, "ok thanks"));
    await h.openai.waitForRequests(before + 1, 10_000);
    await settle();
    expect(h.telegram.sent(chat).length).toBe(1);
    const assistant = await db.query(
      `SELECT count(*)::int AS n FROM turns t JOIN chats c ON c.current_session_id = t.session_id
        WHERE c.address = $1 AND t.role = 'assistant'`,
      [`telegram:private:${chat}`],
    );
    expect(assistant.rows[0].n).toBe(0);

    h.openai.enqueue({ content: "Noted, I'll remember that.\nNO_REPLY" });
    h.telegram.pushUpdate(privateText(chat, "remember I like tea"));
    const [, stripped] = await sentTo(h, chat, 2);
    expect(stripped!.params.text).toBe("Noted, I'll remember that.");
  });

  it("runs a tool round trip and reports malformed tool arguments back to the model", async () => {
    const chat = 200000002;
    h.openai.enqueue({ toolCalls: [{ name: "current_time", arguments: { timezone: 42 } }] });
    h.openai.enqueue({ toolCalls: [{ name: "current_time", arguments: { timezone: "Europe/Berlin" } }] });
    h.openai.enqueue({ content: "It is afternoon in Berlin." });
    const before = h.openai.requests.length;
    h.telegram.pushUpdate(privateText(chat, "what time is it in Berlin?"));
    const [reply] = await sentTo(h, chat, 1);
    expect(reply!.params.text).toBe("It is afternoon in Berlin.");
    const requests = h.openai.requests.slice(before).map((r) => r.body.messages as { role: string; content: string }[]);
    expect(requests.length).toBe(3);
    const toolResults = requests[2]!.filter((m) => m.role === "tool").map((m) => JSON.parse(m.content));
    expect(toolResults[0].error).toMatch(/invalid arguments for current_time: timezone/);
    expect(toolResults[1]).toMatchObject({ timezone: "Europe/Berlin", utc: expect.any(String) });
    expect(h.openai.requests.at(-1)!.body.tools?.map((t) => (t as { function: { name: string } }).function.name)).toContain("current_time");

    const stored = await db.query(
      `SELECT t.role FROM turns t JOIN chats c ON c.current_session_id = t.session_id WHERE c.address = $1 ORDER BY t.seq`,
      [`telegram:private:${chat}`],
    );
    expect(stored.rows.map((r) => r.role)).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant"]);
  });

  it("stores an answer cut inside an emoji (a lone surrogate) with U+FFFD, and keeps the batch's turns in order", async () => {
    const chat = 123456790;
    h.openai.onRequest((request) => (JSON.stringify(request.body.messages).includes("cut-me") ? { content: "cut short \ud83d" } : undefined));
    h.telegram.pushUpdate(privateText(chat, "cut-me"));
    const [reply] = await sentTo(h, chat, 1);
    h.openai.onRequest(undefined);
    expect(reply!.params.text).toContain("cut short");
    const turns = await db.query(
      `SELECT t.role, t.content FROM turns t JOIN chats c ON c.current_session_id = t.session_id WHERE c.address = $1 ORDER BY t.seq`,
      [`telegram:private:${chat}`],
    );
    expect(turns.rows).toEqual([
      { role: "user", content: "cut-me" },
      { role: "assistant", content: "cut short \ufffd" },
    ]);
  });

  it("answers an update delivered twice once", async () => {
    const chat = 200000003;
    h.openai.enqueue({ content: "Only once." });
    const update = h.telegram.pushUpdate(privateText(chat, "hello twice"));
    h.telegram.pushUpdate({ ...update });
    await sentTo(h, chat, 1);
    await settle(1_500);
    expect(h.telegram.sent(chat).length).toBe(1);
  });

  it("delays only the rate-limited chat by retry_after and sends a 5000-character answer in two messages", async () => {
    const limited = 200000004;
    const other = 200000005;
    h.telegram.failNext("sendMessage", { status: 429, retryAfter: 2 }, { chatId: limited });
    h.openai.onRequest((request) => {
      const last = (request.body.messages as { role: string; content: string }[]).at(-1)!.content;
      if (last.includes("long please")) return { content: `${"word ".repeat(1000)}`.trim() };
      return { content: `echo: ${last.split("\n").at(-1)}` };
    });
    try {
      const t0 = Date.now();
      h.telegram.pushUpdate(privateText(limited, "first in limited chat"));
      h.telegram.pushUpdate(privateText(other, "long please"));
      const otherSends = await sentTo(h, other, 2);
      const otherDoneMs = Date.now() - t0;
      // The fake records the refused call too: the first is the 429, the second the retry.
      const [, limitedSend] = await sentTo(h, limited, 2, 20_000);
      const limitedDoneMs = Date.now() - t0;
      expect(limitedSend!.params.text).toBe("echo: first in limited chat");
      expect(otherDoneMs).toBeLessThan(limitedDoneMs);
      expect(limitedDoneMs).toBeGreaterThanOrEqual(2_000);
      const limitedCalls = h.telegram.callsTo("sendMessage").filter((c) => String(c.params.chat_id) === String(limited));
      expect(limitedCalls.length).toBe(2);
      expect(limitedCalls[1]!.at.getTime() - limitedCalls[0]!.at.getTime()).toBeGreaterThanOrEqual(1_900);

      expect(otherSends.length).toBe(2);
      const texts = otherSends.map((c) => String(c.params.text));
      expect(texts.every((t) => t.length <= 4096)).toBe(true);
      expect(texts.join(" ").split(/\s+/).length).toBe(1000);
      const delivery = await db.query(
        "SELECT status, attempts, platform_message_ids FROM deliveries WHERE target = $1",
        [`telegram:private:${other}`],
      );
      expect(delivery.rows[0]).toMatchObject({ status: "sent" });
      expect(delivery.rows[0].platform_message_ids).toHaveLength(2);
    } finally {
      h.openai.onRequest(undefined);
    }
  });
});
