import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Api, Bot, GrammyError, HttpError, InputFile } from "grammy";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeTelegram, type FakeTelegram } from "./telegram-bot-api.fake";

const TOKEN = "123456:TEST-token";

/** Same shape as the private-text fixture in /work/shared/fixtures/telegram. */
const privateText = {
  update_id: 814200001,
  message: {
    message_id: 17,
    from: { id: 123456789, is_bot: false, first_name: "Alice", username: "alice_l", language_code: "en" },
    chat: { id: 123456789, first_name: "Alice", username: "alice_l", type: "private" },
    date: 1778400180,
    text: "Hi! What can you do?",
  },
};

describe("fake Telegram Bot API through grammY", () => {
  let fake: FakeTelegram;
  let api: Api;

  beforeAll(async () => {
    fake = await startFakeTelegram({ token: TOKEN });
    api = new Api(TOKEN, { apiRoot: fake.apiRoot });
  });
  afterEach(() => fake.reset());
  afterAll(() => fake.close());

  it("answers getMe with the configured bot", async () => {
    const me = await api.getMe();
    expect(me).toMatchObject({ id: 7_000_000_001, is_bot: true, username: "nahida_test_bot" });
  });

  it("refuses a wrong token with Telegram's 401", async () => {
    const error = await new Api("999:wrong", { apiRoot: fake.apiRoot }).getMe().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GrammyError);
    expect(error).toMatchObject({ error_code: 401, description: "Unauthorized" });
  });

  it("returns real-shaped messages with per-chat ids, threads and replies", async () => {
    const first = await api.sendMessage(-1001555000333, "hello", { message_thread_id: 42 });
    const second = await api.sendMessage(-1001555000333, "again", { reply_parameters: { message_id: 1200 } });
    const other = await api.sendMessage(123456789, "private");

    expect(first).toMatchObject({ message_id: 1, text: "hello", message_thread_id: 42, chat: { id: -1001555000333, type: "supergroup" } });
    expect(second).toMatchObject({ message_id: 2, reply_to_message: { message_id: 1200 } });
    expect(other).toMatchObject({ message_id: 1, chat: { id: 123456789, type: "private" } });
    expect(typeof first.date).toBe("number");
    expect(fake.sent(-1001555000333).map((c) => c.params.text)).toEqual(["hello", "again"]);
    expect(fake.sent()).toHaveLength(3);
  });

  it("records an InputFile upload sent as multipart", async () => {
    const png = Buffer.from("89504e470d0a1a0a0000", "hex");
    const message = await api.sendPhoto(123456789, new InputFile(png, "a.png"), {
      caption: "<b>chart</b>",
      parse_mode: "HTML",
      reply_parameters: { message_id: 17 },
    });

    expect(message).toMatchObject({ caption: "chart", reply_to_message: { message_id: 17 } });
    expect(message.photo?.[0]?.file_size).toBe(png.length);
    const [call] = fake.callsTo("sendPhoto");
    expect(call?.files).toEqual([{ field: "photo", filename: "a.png", size: png.length }]);
    expect(call?.params).toMatchObject({ chat_id: 123456789, caption: "<b>chart</b>", reply_parameters: { message_id: 17 } });
  });

  it("parses urlencoded and browser multipart bodies too", async () => {
    const form = await fetch(`${fake.apiRoot}/bot${TOKEN}/sendMessage`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ chat_id: "42", text: "123" }),
    }).then((r) => r.json());
    expect(form).toMatchObject({ ok: true, result: { chat: { id: 42 }, text: "123" } });

    const data = new FormData();
    data.set("chat_id", "42");
    data.set("document", new Blob([Buffer.from("hello world")]), "notes; v2.txt");
    const upload = await fetch(`${fake.apiRoot}/bot${TOKEN}/sendDocument`, { method: "POST", body: data }).then((r) => r.json());
    expect(upload).toMatchObject({ ok: true, result: { document: { file_name: "notes; v2.txt", file_size: 11 } } });
    expect(fake.callsTo("sendDocument")[0]?.files).toEqual([{ field: "document", filename: "notes; v2.txt", size: 11 }]);
  });

  it("validates text like Telegram", async () => {
    const failure = (promise: Promise<unknown>) => promise.then(() => undefined, (e: unknown) => e as GrammyError);

    expect((await failure(api.sendMessage(1, "  ")))?.description).toBe("Bad Request: message text is empty");
    expect((await failure(api.sendMessage(1, "x".repeat(4097))))?.description).toBe("Bad Request: message is too long");
    await expect(api.sendMessage(1, "x".repeat(4096))).resolves.toMatchObject({ message_id: 1 });
    expect((await failure(api.sendMessage(1, "<b>open", { parse_mode: "HTML" })))?.description).toBe(
      `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "b"`,
    );
    expect((await failure(api.sendMessage(1, "a <br> b", { parse_mode: "HTML" })))?.description).toBe(
      `Bad Request: can't parse entities: Unsupported start tag "br" at byte offset 2`,
    );
    expect((await failure(api.sendMessage(1, "1 < 2", { parse_mode: "HTML" })))?.description).toBe(
      `Bad Request: can't parse entities: Unsupported start tag "" at byte offset 2`,
    );
    expect((await failure(api.sendMessage(1, "<b><i>x</b></i>", { parse_mode: "HTML" })))?.error_code).toBe(400);
    await expect(
      api.sendMessage(1, '<b>a</b> &lt;3 <a href="https://x.y/?a=1&b=2">l</a> <span class="tg-spoiler">s</span> <tg-spoiler>t</tg-spoiler>', {
        parse_mode: "HTML",
      }),
    ).resolves.toMatchObject({ text: "a <3 l s t" });
  });

  it("returns a pushed update to a waiting long poll and drops it once confirmed", async () => {
    const started = Date.now();
    const poll = api.getUpdates({ timeout: 5, allowed_updates: ["message"] });
    await fake.waitForCalls("getUpdates", 1, 1000);
    const pushed = fake.pushUpdate(privateText);

    const updates = await poll;
    expect(Date.now() - started).toBeLessThan(2000);
    expect(updates).toEqual([pushed]);
    expect(updates[0]?.update_id).toBe(814200001);

    const next = fake.pushUpdate({ message: { ...privateText.message, message_id: 18, text: "second" } });
    expect(next.update_id).toBe(814200002);
    expect(await api.getUpdates({ offset: 814200002, timeout: 0 })).toEqual([next]);
    expect(fake.pendingUpdates.map((u) => u.update_id)).toEqual([814200002]);
    expect(() => fake.pushUpdate(privateText)).toThrow(/confirmed offset/);

    // allowed_updates is remembered, so a callback query is never delivered.
    fake.pushUpdate({ callback_query: { id: "1", data: "ack" } });
    expect(await api.getUpdates({ offset: 814200003, timeout: 0 })).toEqual([]);
  });

  it("honours limit", async () => {
    fake.pushUpdate({ message: { text: "a" } });
    fake.pushUpdate({ message: { text: "b" } });
    const updates = await api.getUpdates({ limit: 1, timeout: 0 });
    expect(updates).toHaveLength(1);
    expect(updates[0]).toMatchObject({ message: { text: "a" } });
  });

  it("terminates the earlier of two concurrent getUpdates with 409", async () => {
    const first = api.getUpdates({ timeout: 5 }).catch((e: unknown) => e);
    await fake.waitForCalls("getUpdates", 1, 1000);
    const second = api.getUpdates({ timeout: 5 });
    await fake.waitForCalls("getUpdates", 2, 1000);

    expect(await first).toMatchObject({
      error_code: 409,
      description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
    });
    const update = fake.pushUpdate({ message: { text: "for the survivor" } });
    expect(await second).toEqual([update]);
  });

  it("surfaces a scripted 429 with retry_after, only for the chosen chat and count", async () => {
    fake.failNext("sendMessage", { status: 429, retryAfter: 7 }, { chatId: 100, times: 2 });

    await expect(api.sendMessage(200, "other chat")).resolves.toMatchObject({ message_id: 1 });
    for (let attempt = 0; attempt < 2; attempt++) {
      const error = await api.sendMessage(100, "hi").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(GrammyError);
      expect(error).toMatchObject({ error_code: 429, description: "Too Many Requests: retry after 7", parameters: { retry_after: 7 } });
    }
    await expect(api.sendMessage(100, "hi")).resolves.toMatchObject({ message_id: 1 });
    expect(fake.sent(100)).toHaveLength(3);
  });

  it("scripts server errors and dropped connections", async () => {
    fake.failNext("sendChatAction", { status: 502 });
    fake.failNext("sendMessage", { network: true });
    fake.failNext("sendDocument", { status: 400, description: "Bad Request: chat not found" });

    await expect(api.sendChatAction(1, "typing")).rejects.toMatchObject({ error_code: 502 });
    await expect(api.sendMessage(1, "lost")).rejects.toBeInstanceOf(HttpError);
    await expect(api.sendDocument(1, "file-id")).rejects.toMatchObject({ description: "Bad Request: chat not found" });
    await expect(api.sendChatAction(1, "typing")).resolves.toBe(true);
    expect(fake.calls.map((c) => c.method)).toEqual(["sendChatAction", "sendMessage", "sendDocument", "sendChatAction"]);
  });

  it("scripts an error answer without a description", async () => {
    fake.failNext("sendMessage", { status: 400, withoutDescription: true });
    const error = await api.sendMessage(1, "terse").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GrammyError);
    expect(error).toMatchObject({ error_code: 400, description: undefined });
  });

  it("answers getUpdates at once, ignoring timeout, when asked to", async () => {
    const impatient = await startFakeTelegram({ ignorePollTimeout: true });
    try {
      const impatientApi = new Api(TOKEN, { apiRoot: impatient.apiRoot });
      const started = Date.now();
      expect(await impatientApi.getUpdates({ timeout: 5 })).toEqual([]);
      expect(Date.now() - started).toBeLessThan(1000);
      const update = impatient.pushUpdate({ message: { text: "queued" } });
      expect(await impatientApi.getUpdates({ timeout: 5 })).toEqual([update]);
    } finally {
      await impatient.close();
    }
  });

  it("records unknown methods and answers true", async () => {
    await expect(api.setMyCommands([{ command: "status", description: "Status" }])).resolves.toBe(true);
    expect(fake.callsTo("setMyCommands")[0]?.params).toEqual({ commands: [{ command: "status", description: "Status" }] });
  });

  it("runs a webhook: blocks getUpdates and delivers with the secret header", async () => {
    const received: { secret: string | undefined; body: string }[] = [];
    const receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        received.push({ secret: req.headers["x-telegram-bot-api-secret-token"] as string | undefined, body });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/telegram`;

    try {
      await api.setWebhook(url, { secret_token: "s3cret" });
      expect(fake.webhookUrl).toBe(url);
      expect(fake.webhookSecret).toBe("s3cret");
      expect(await api.getWebhookInfo()).toMatchObject({ url });
      await expect(api.getUpdates()).rejects.toMatchObject({
        error_code: 409,
        description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
      });

      expect(await fake.deliverWebhook({ message: { text: "via webhook" } })).toBe(200);
      expect(received).toHaveLength(1);
      expect(received[0]?.secret).toBe("s3cret");
      expect(JSON.parse(received[0]?.body ?? "")).toMatchObject({ update_id: expect.any(Number), message: { text: "via webhook" } });

      await api.deleteWebhook();
      expect(fake.webhookUrl).toBeUndefined();
      await expect(api.getUpdates({ timeout: 0 })).resolves.toEqual([]);
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it("serves a grammY Bot polling loop end to end", async () => {
    const bot = new Bot(TOKEN, { client: { apiRoot: fake.apiRoot } });
    bot.on("message:text", (ctx) => ctx.reply(`echo: ${ctx.message.text}`, { reply_parameters: { message_id: ctx.message.message_id } }));
    const running = bot.start({ drop_pending_updates: true });
    try {
      await fake.waitForCalls("getUpdates", 1, 2000);
      fake.pushUpdate({ ...privateText, update_id: undefined });
      const [reply] = await fake.waitForCalls("sendMessage", 1, 2000);
      expect(reply?.params).toMatchObject({ chat_id: 123456789, text: "echo: Hi! What can you do?", reply_parameters: { message_id: 17 } });
    } finally {
      await bot.stop();
      await running;
    }
    expect(fake.pendingUpdates).toEqual([]);
  });

  it("rejects waitForCalls on timeout", async () => {
    await expect(fake.waitForCalls("sendMessage", 1, 50)).rejects.toThrow(/timed out after 50 ms/);
  });
});
