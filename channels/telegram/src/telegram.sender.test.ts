import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Attachment, ChatAddress, OutboundMessage } from "@nahida/contracts";
import { startFakeTelegram, type FakeTelegram, type FakeTelegramFailure } from "../../../test/fakes/telegram-bot-api.fake";
import { ChannelSendError, type SendProgress } from "@nahida/channels";
import { describeChannelSenderConformance, type ConformanceFailure, type DeliveredPart } from "@nahida/channels/conformance";
import { TelegramSender } from "./telegram.sender";

const TOKEN = "7000000001:CONFORMANCE-secret_token";
const TOKEN_SECRET_PART = "CONFORMANCE-secret_token";
/** A 1×1 transparent PNG. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "base64");

let nextChat = 610_000_000;
const privateChat = (): ChatAddress => ({ channel: "telegram", type: "private", id: String(++nextChat) });

function toFakeFailure(failure: ConformanceFailure): FakeTelegramFailure {
  switch (failure.kind) {
    case "rate_limited":
      return { status: 429, retryAfter: failure.retryAfterSeconds };
    case "transient":
      return { status: 502 };
    case "network":
      return { network: true };
    case "permanent":
      return { status: 400, description: failure.description };
  }
}

describeChannelSenderConformance("TelegramSender", async () => {
  const telegram = await startFakeTelegram();
  // Methods of the failures scripted per chat, oldest first. The fake consumes them in the
  // order calls arrive, and numbers only accepted messages (1, 2, ... per chat), so replaying
  // its call log against this list tells which calls were accepted and which id each got.
  const scripted = new Map<string, string[]>();
  return {
    sender: new TelegramSender({ token: TOKEN, apiRoot: telegram.apiRoot }),
    newTarget: privateChat,
    attachments: [
      { type: "photo", fileId: "AgACAgIAAxkBAAIBZ2ZconformanceFileId" },
      { type: "photo", url: "https://files.example.com/conformance.png" },
    ],
    multiPartText: Array.from({ length: 300 }, (_, i) => `Line ${i}: some **bold** words and \`code\`.`).join("\n"),
    failNext(target, on, failure) {
      const method = on === "text" ? "sendMessage" : "sendPhoto";
      telegram.failNext(method, toFakeFailure(failure), { chatId: target.id });
      scripted.set(target.id, [...(scripted.get(target.id) ?? []), method.toLowerCase()]);
    },
    async delivered(target) {
      const failing = [...(scripted.get(target.id) ?? [])];
      const parts: DeliveredPart[] = [];
      for (const call of telegram.sent(target.id)) {
        const at = failing.indexOf(call.method.toLowerCase());
        if (at >= 0) {
          failing.splice(at, 1);
          continue;
        }
        const id = String(parts.length + 1);
        parts.push(call.method === "sendMessage" ? { kind: "text", platformMessageId: id, text: String(call.params.text) } : { kind: "attachment", platformMessageId: id });
      }
      return parts;
    },
    errorCodes: { rate_limited: 429, transient: 502, permanent: 400 },
    secrets: [TOKEN, TOKEN_SECRET_PART],
    close: () => telegram.close(),
  };
});

describe("TelegramSender", () => {
  let telegram: FakeTelegram;
  let workspaceDir: string;
  let outsideDir: string;
  let sender: TelegramSender;

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    workspaceDir = await mkdtemp(join(tmpdir(), "nahida-sender-ws-"));
    outsideDir = await mkdtemp(join(tmpdir(), "nahida-sender-out-"));
    await mkdir(join(workspaceDir, "img"));
    await writeFile(join(workspaceDir, "img", "dot.png"), PNG);
    await writeFile(join(workspaceDir, "report.txt"), "quarterly numbers\n");
    await writeFile(join(outsideDir, "secret.txt"), "not for the bot");
    await symlink(join(outsideDir, "secret.txt"), join(workspaceDir, "escape.txt"));
    sender = new TelegramSender({ token: TOKEN, apiRoot: telegram.apiRoot, workspaceDir });
  });
  afterAll(async () => {
    await telegram?.close();
    await rm(workspaceDir, { recursive: true, force: true });
    await rm(outsideDir, { recursive: true, force: true });
  });

  const noProgress = (): SendProgress & { ids: string[] } => {
    const ids: string[] = [];
    return { deliveryId: "test-delivery", sentParts: 0, ids, recordPart: async (_index, id) => void ids.push(id) };
  };
  const outbound = (text: string, attachments: Attachment[] = [], replyTo?: string): OutboundMessage => ({
    text,
    attachments,
    extra: {},
    ...(replyTo ? { replyTo } : {}),
  });

  it("uploads workspace files under their names, with captions", async () => {
    const chat = privateChat();
    const progress = noProgress();
    await sender.send(
      chat,
      outbound("", [
        { type: "photo", path: "img/dot.png", caption: "a dot" },
        { type: "document", path: "./report.txt", filename: "Report 2026.txt" },
      ]),
      progress,
    );
    const [photo, document] = telegram.sent(chat.id);
    expect(photo!.method).toBe("sendPhoto");
    expect(photo!.files).toEqual([{ field: "photo", filename: "dot.png", size: PNG.length }]);
    expect(photo!.params.caption).toBe("a dot");
    expect(document!.method).toBe("sendDocument");
    expect(document!.files).toEqual([{ field: "document", filename: "Report 2026.txt", size: "quarterly numbers\n".length }]);
    expect(progress.ids).toEqual(["1", "2"]);
  });

  it.each([
    ["../etc/passwd", "'..'"],
    ["/etc/passwd", "absolute"],
    ["escape.txt", "outside the workspace"],
    ["missing.png", "no file"],
  ])("refuses the attachment path %j as permanent without calling Telegram", async (path, reason) => {
    const chat = privateChat();
    const error = await sender.send(chat, outbound("", [{ type: "document", path }]), noProgress()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChannelSendError);
    expect(error).toMatchObject({ kind: "permanent" });
    expect((error as ChannelSendError).description).toContain(reason);
    expect(telegram.sent(chat.id)).toEqual([]);
  });

  it("needs a workspace directory for path attachments", async () => {
    const chat = privateChat();
    const bare = new TelegramSender({ token: TOKEN, apiRoot: telegram.apiRoot });
    const error = await bare.send(chat, outbound("", [{ type: "photo", path: "img/dot.png" }]), noProgress()).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "permanent", description: expect.stringContaining("NAHIDA_WORKSPACE_DIR") });
    expect(telegram.sent(chat.id)).toEqual([]);
  });

  it("puts reply_to on the first part only and the forum thread on every part", async () => {
    const topic: ChatAddress = { channel: "telegram", type: "group", id: "-1001700000001", thread: "42" };
    await sender.send(topic, outbound("in the topic", [{ type: "photo", fileId: "AgACfile" }], "77"), noProgress());
    const [text, photo] = telegram.sent(topic.id);
    expect(text!.params).toMatchObject({ message_thread_id: 42, reply_parameters: { message_id: 77 }, parse_mode: "HTML" });
    expect(photo!.params).toMatchObject({ message_thread_id: 42, photo: "AgACfile" });
    expect(photo!.params.reply_parameters).toBeUndefined();
  });

  it("resends a chunk Telegram refuses for its entities as plain text, keeping reply and thread", async () => {
    const topic: ChatAddress = { channel: "telegram", type: "group", id: "-1001700000002", thread: "7" };
    telegram.failNext("sendMessage", { status: 400, description: "Bad Request: can't parse entities: Unsupported start tag \"b\"" }, { chatId: topic.id });
    const progress = noProgress();
    await sender.send(topic, outbound("**bold** and `code`", [], "5"), progress);
    const [html, plain] = telegram.callsTo("sendMessage").filter((c) => String(c.params.chat_id) === topic.id);
    expect(html!.params).toMatchObject({ text: "<b>bold</b> and <code>code</code>", parse_mode: "HTML" });
    expect(plain!.params.text).toBe("**bold** and `code`");
    expect(plain!.params.parse_mode).toBeUndefined();
    expect(plain!.params).toMatchObject({ message_thread_id: 7, reply_parameters: { message_id: 5 } });
    expect(progress.ids).toEqual(["1"]);
  });

  it("does not resend as plain text for other 400s", async () => {
    const chat = privateChat();
    telegram.failNext("sendMessage", { status: 400, description: "Bad Request: chat not found" }, { chatId: chat.id });
    const error = await sender.send(chat, outbound("**hi**"), noProgress()).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "permanent", description: "Bad Request: chat not found", details: { error_code: 400 } });
    expect(telegram.sent(chat.id)).toHaveLength(1);
  });

  it.each([
    [400, "permanent"],
    [403, "permanent"],
    [429, "rate_limited"],
    [502, "transient"],
  ] as const)("classifies an error %i without a description by its error_code (%s)", async (status, kind) => {
    const chat = privateChat();
    telegram.failNext("sendMessage", { status, withoutDescription: true }, { chatId: chat.id });
    const error = await sender.send(chat, outbound("plain words"), noProgress()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChannelSendError);
    expect(error).toMatchObject({ kind, description: `Telegram error ${status} (no description)`, details: { error_code: status } });
    expect(telegram.sent(chat.id)).toHaveLength(1);
  });

  it("does not resend as plain text for a 400 without a description", async () => {
    const chat = privateChat();
    telegram.failNext("sendMessage", { status: 400, withoutDescription: true }, { chatId: chat.id });
    const error = await sender.send(chat, outbound("**hi**"), noProgress()).catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: "permanent" });
    expect(telegram.sent(chat.id)).toHaveLength(1);
  });

  it("treats a refused token as permanent without echoing it", async () => {
    const strict = await startFakeTelegram({ token: "7000000001:the-right-one" });
    try {
      const wrong = new TelegramSender({ token: TOKEN, apiRoot: strict.apiRoot });
      const error = (await wrong.send(privateChat(), outbound("hello"), noProgress()).catch((e: unknown) => e)) as ChannelSendError;
      expect(error).toMatchObject({ kind: "permanent", details: { error_code: 401 } });
      expect(`${error.message} ${JSON.stringify(error.details)}`).not.toContain(TOKEN_SECRET_PART);
    } finally {
      await strict.close();
    }
  });
});
