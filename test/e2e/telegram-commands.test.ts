import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { sentTo, startHarness, type Harness } from "../support/nahida-harness";
import { waitFor } from "../support/infra";
import { deliveriesTo, ledgerSettled } from "../support/ledger";
import { privateText } from "./telegram-fixtures";

describe("built-in commands end to end", () => {
  let h: Harness;
  let db: pg.Pool;
  beforeAll(async () => {
    h = await startHarness("e2e_commands");
    db = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
  });
  afterAll(async () => {
    await db?.end();
    await h?.close();
  });

  it("/stop cancels the reply in progress; the user's message is kept and nothing is sent for it", async () => {
    const chat = 400000001;
    h.openai.enqueue({ content: "a very slow answer", delayMs: 8_000 });
    h.telegram.pushUpdate(privateText(chat, "write me an essay"));
    await waitFor(async () => h.openai.requests.some((r) => JSON.stringify(r.body.messages).includes("write me an essay")), 10_000, "the LLM call");
    // A slow model: after half a second the chat shows "typing…".
    const typing = await waitFor(async () => h.telegram.callsTo("sendChatAction").find((c) => String(c.params.chat_id) === String(chat)), 5_000, "typing…");
    expect(typing.params.action).toBe("typing");
    const t0 = Date.now();
    h.telegram.pushUpdate(privateText(chat, "/stop"));
    const [stopped] = await sentTo(h, chat, 1);
    expect(stopped!.params.text).toBe("Stopped the reply in progress.");
    expect(Date.now() - t0).toBeLessThan(6_000);
    const turns = await db.query(
      `SELECT t.role, t.content FROM turns t JOIN chats c ON c.current_session_id = t.session_id WHERE c.address = $1 ORDER BY t.seq`,
      [`telegram:private:${chat}`],
    );
    expect(turns.rows).toEqual([{ role: "user", content: "write me an essay" }]);

    h.telegram.pushUpdate(privateText(chat, "/stop"));
    const [, nothing] = await sentTo(h, chat, 2);
    expect(nothing!.params.text).toBe("Nothing was running.");
  });

  it("/new rotates the chat to a fresh session without the old history; /reset clears the current one", async () => {
    const chat = 400000002;
    h.openai.enqueue({ content: "first answer" });
    h.telegram.pushUpdate(privateText(chat, "remember the number 7"));
    await sentTo(h, chat, 1);
    const before = (await db.query("SELECT current_session_id FROM chats WHERE address = $1", [`telegram:private:${chat}`])).rows[0].current_session_id;

    h.telegram.pushUpdate(privateText(chat, "/new"));
    const [, rotated] = await sentTo(h, chat, 2);
    expect(rotated!.params.text).toMatch(/^Started a new session \([0-9a-f]{8}\)\.$/);
    const after = (await db.query("SELECT current_session_id FROM chats WHERE address = $1", [`telegram:private:${chat}`])).rows[0].current_session_id;
    expect(after).not.toBe(before);

    h.openai.enqueue({ content: "fresh answer" });
    const count = h.openai.requests.length;
    h.telegram.pushUpdate(privateText(chat, "what number?"));
    await sentTo(h, chat, 3);
    const messages = h.openai.requests[count]!.body.messages as { role: string; content: string }[];
    expect(messages.filter((m) => m.role !== "system").map((m) => m.content.split("\n").at(-1))).toEqual(["what number?"]);

    h.telegram.pushUpdate(privateText(chat, "/reset"));
    const [, , , reset] = await sentTo(h, chat, 4);
    expect(reset!.params.text).toBe("Cleared this session's history (2 turns).");
    expect((await db.query("SELECT count(*)::int AS n FROM turns WHERE session_id = $1", [after])).rows[0].n).toBe(0);
    expect((await db.query("SELECT count(*)::int AS n FROM turns WHERE session_id = $1", [before])).rows[0].n).toBe(2);
  });

  it("/trigger always, from a group admin, makes the bot answer unaddressed group messages; others are refused", async () => {
    const group = -100400000003;
    h.telegram.setChatAdministrators(group, [{ userId: 1, status: "creator", firstName: "Bob" }]);
    const message = (text: string, id: number, from = 1) => ({
      message: { message_id: id, from: { id: from, is_bot: false, first_name: from === 1 ? "Bob" : "Eve" }, chat: { id: group, title: "G", type: "group" }, date: 1778400300, text },
    });
    h.telegram.pushUpdate(message("/trigger always", 100, 2));
    const [refused] = await sentTo(h, group, 1);
    expect(refused!.params.text).toBe("Only group admins can do that here.");
    h.telegram.pushUpdate(message("/reset", 101, 2));
    const [, refusedReset] = await sentTo(h, group, 2);
    expect(refusedReset!.params.text).toBe("Only group admins can do that here.");

    h.telegram.pushUpdate(message("/trigger always", 1));
    const [, , ack] = await sentTo(h, group, 3);
    expect(ack!.params.text).toBe("I will answer every message in this chat.");
    h.openai.enqueue({ content: "I hear you." });
    h.telegram.pushUpdate(message("anyone around?", 2));
    const [, , , answer] = await sentTo(h, group, 4);
    expect(answer!.params.text).toBe("I hear you.");
  });

  it("/queue followup answers messages sent while the agent works one by one, in runs of their own; in groups only admins set it", async () => {
    const group = -100400000004;
    h.telegram.pushUpdate({ message: { message_id: 300, from: { id: 2, is_bot: false, first_name: "Eve" }, chat: { id: group, title: "G", type: "group" }, date: 1778400300, text: "/queue followup" } });
    const [refused] = await sentTo(h, group, 1);
    expect(refused!.params.text).toBe("Only group admins can do that here.");

    const chat = 400000006;
    const lane = `chat:telegram:private:${chat}`;
    h.telegram.pushUpdate(privateText(chat, "/queue"));
    const [shown] = await sentTo(h, chat, 1);
    expect(shown!.params.text).toMatch(/^Queue mode: collect \(/);
    h.telegram.pushUpdate(privateText(chat, "/queue followup"));
    const [, set] = await sentTo(h, chat, 2);
    expect(set!.params.text).toBe("Queue mode set to followup: messages that arrive while I work are answered one by one.");
    expect((await db.query("SELECT mode FROM lanes WHERE key = $1", [lane])).rows[0].mode).toBe("followup");

    const before = h.openai.requests.length;
    h.openai.enqueue({ content: "one", delayMs: 1_000 });
    h.openai.enqueue({ content: "two" });
    h.openai.enqueue({ content: "three" });
    h.telegram.pushUpdate(privateText(chat, "a"));
    await h.openai.waitForRequests(before + 1);
    h.telegram.pushUpdate(privateText(chat, "b"));
    h.telegram.pushUpdate(privateText(chat, "c"));
    const replies = await sentTo(h, chat, 5, 15_000);
    expect(replies.slice(2).map((r) => r.params.text)).toEqual(["one", "two", "three"]);
    const runs = await db.query("SELECT item_count FROM lane_runs WHERE lane_key = $1 ORDER BY started_at DESC LIMIT 3", [lane]);
    expect(runs.rows.map((r) => r.item_count)).toEqual([1, 1, 1]);
  });

  it("/queue interrupt: a message during a slow run aborts it, and the next run answers both messages together, once", async () => {
    const chat = 400000007;
    const lane = `chat:telegram:private:${chat}`;
    h.telegram.pushUpdate(privateText(chat, "/queue interrupt"));
    const [set] = await sentTo(h, chat, 1);
    expect(set!.params.text).toMatch(/^Queue mode set to interrupt: a message that arrives while I work stops the answer in progress/);

    const asked: string[][] = [];
    h.openai.onRequest((request) => {
      if (request.body.user === undefined) return undefined;
      const users = (request.body.messages as { role: string; content: string }[]).filter((m) => m.role === "user").map((m) => m.content.split("\n").at(-1)!);
      asked.push(users);
      // Alone, the first question takes long enough to be superseded; with the second one it is answered at once.
      return users.includes("and the second?") ? { content: "Both answered." } : { content: "too slow", delayMs: 20_000 };
    });
    try {
      h.telegram.pushUpdate(privateText(chat, "the first question"));
      await waitFor(async () => asked.length === 1 || undefined, 10_000, "the first question's model call");
      h.telegram.pushUpdate(privateText(chat, "and the second?"));
      const replies = await sentTo(h, chat, 2, 15_000);
      expect(replies[1]!.params.text).toBe("Both answered.");
      expect(asked.at(-1)!.slice(-2)).toEqual(["the first question", "and the second?"]);
      const runs = await db.query("SELECT status, error, item_count FROM lane_runs WHERE lane_key = $1 ORDER BY started_at DESC LIMIT 2", [lane]);
      expect(runs.rows).toEqual([
        { status: "succeeded", error: null, item_count: 2 },
        { status: "lost", error: "superseded by a newer message", item_count: 1 },
      ]);
      // Once: both messages' items are done by the one run, and no other answer follows.
      const items = await db.query("SELECT attempts, status FROM lane_items WHERE lane_key = $1 AND kind = 'inbound' ORDER BY seq DESC LIMIT 2", [lane]);
      expect(items.rows).toEqual([{ attempts: 1, status: "done" }, { attempts: 1, status: "done" }]);
      expect(h.telegram.sent(chat)).toHaveLength(2);
      expect((await db.query("SELECT count(*)::int AS n FROM turns t JOIN chats c ON c.current_session_id = t.session_id WHERE c.address = $1 AND t.role = 'assistant'", [lane.slice(5)])).rows[0].n).toBe(1);
    } finally {
      h.openai.onRequest(undefined);
    }
  });

  it("/stop right after a superseding message stops the answer to both, whether the run had started or not", async () => {
    const chat = 400000008;
    const lane = `chat:telegram:private:${chat}`;
    h.telegram.pushUpdate(privateText(chat, "/queue interrupt"));
    await sentTo(h, chat, 1);
    const asked: string[] = [];
    h.openai.onRequest((request) => {
      if (request.body.user === undefined) return undefined;
      const users = (request.body.messages as { role: string; content: string }[]).filter((m) => m.role === "user");
      asked.push(users.at(-1)!.content.split("\n").at(-1)!);
      return { content: "never sent", delayMs: 20_000 };
    });
    try {
      h.telegram.pushUpdate(privateText(chat, "slow one"));
      await waitFor(async () => asked.length === 1 || undefined, 10_000, "the first model call");
      h.telegram.pushUpdate(privateText(chat, "another"));
      h.telegram.pushUpdate(privateText(chat, "/stop"));
      const [, stopped] = await sentTo(h, chat, 2, 15_000);
      expect(stopped!.params.text).toBe("Stopped the reply in progress.");
      await waitFor(async () => (await db.query("SELECT 1 FROM lane_items WHERE lane_key = $1 AND status IN ('pending', 'running') LIMIT 1", [lane])).rows.length === 0 || undefined, 15_000, "the lane to drain");
      expect(h.telegram.sent(chat)).toHaveLength(2);
      const turns = await db.query("SELECT t.role, t.content FROM turns t JOIN chats c ON c.current_session_id = t.session_id WHERE c.address = $1 ORDER BY t.seq", [lane.slice(5)]);
      expect(turns.rows.filter((t) => t.role === "user").map((t) => t.content)).toEqual(["slow one", "another"]);
      expect(turns.rows.filter((t) => t.role === "assistant")).toEqual([]);
    } finally {
      h.openai.onRequest(undefined);
    }
  });
});

describe("anonymous group admins", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness("e2e_anon_admin");
  });
  afterAll(async () => h?.close());

  it("may change the chat, since only admins can post as the group", async () => {
    const group = -100400000009;
    h.telegram.pushUpdate({
      message: {
        message_id: 7,
        from: { id: 1087968824, is_bot: true, first_name: "Group", username: "GroupAnonymousBot" },
        sender_chat: { id: group, title: "Ops", type: "supergroup" },
        chat: { id: group, title: "Ops", type: "supergroup" },
        date: 1778400300,
        text: "/trigger always",
        entities: [{ offset: 0, length: 8, type: "bot_command" }],
      },
    });
    const [ack] = await sentTo(h, group, 1);
    expect(ack!.params.text).toBe("I will answer every message in this chat.");
  });
});

describe("when the LLM keeps failing", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness("e2e_llm_down");
  });
  afterAll(async () => h?.close());

  it("retries the run and finally answers once with an apology", async () => {
    const chat = 400000005;
    h.openai.onRequest(() => ({ status: 500, error: "upstream down", retryAfterMs: 10 }));
    h.telegram.pushUpdate(privateText(chat, "are you there?"));
    const [apology] = await sentTo(h, chat, 1, 30_000);
    expect(apology!.params.text).toBe("Sorry, I could not reach the language model. Please try again later.");
    // SDK retries (2) within each of the lane's 3 attempts.
    expect(h.openai.requests.length).toBe(9);
    await ledgerSettled(h.databaseUrl);
    expect(await deliveriesTo(h.databaseUrl, `telegram:private:${chat}`)).toEqual({ sent: 1 });
    expect(h.telegram.sent(chat)).toHaveLength(1);
  }, 45_000);
});

describe("without an LLM configured", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness("e2e_no_llm", { OPENAI_BASE_URL: "", OPENAI_API_KEY: "" });
  });
  afterAll(async () => h?.close());

  it("still runs commands and answers free text with a configuration hint", async () => {
    const chat = 400000004;
    h.telegram.pushUpdate(privateText(chat, "/model"));
    const [model] = await sentTo(h, chat, 1);
    expect(model!.params.text).toBe("No language model is configured.");
    h.telegram.pushUpdate(privateText(chat, "hello?"));
    const [, hint] = await sentTo(h, chat, 2);
    expect(hint!.params.text).toContain("OPENAI_BASE_URL");
    expect(h.openai.requests).toEqual([]);
  });
});
