import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Attachment, ChatAddress, OutboundMessage } from "@nahida/contracts";
import { ChannelSendError, type SendProgress } from "@nahida/channels";
import { describeChannelSenderConformance, type ConformanceFailure, type DeliveredPart } from "@nahida/channels/conformance";
import { FAKE_MILKY_TEXT_LIMIT, startFakeMilky, type FakeMilky, type FakeMilkyFailure } from "../../../test/fakes/milky.fake";
import { MilkySender } from "./milky.sender";

const TOKEN = "milky-CONFORMANCE-access-token";
/** A 1×1 transparent PNG. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "base64");

let nextPeer = 610_000;
const friend = (): ChatAddress => ({ channel: "milky", type: "private", id: String(++nextPeer) });
const group = (): ChatAddress => ({ channel: "milky", type: "group", id: String(++nextPeer) });

function toFakeFailure(failure: ConformanceFailure): FakeMilkyFailure {
  switch (failure.kind) {
    case "rate_limited":
      return { status: 429, retryAfterSeconds: failure.retryAfterSeconds };
    case "transient":
      return { status: 502 };
    case "network":
      return { network: true };
    case "permanent":
      return { retcode: -400, message: failure.description };
  }
}

function textOf(segments: { type: string; data: Record<string, unknown> }[] | undefined): string {
  return (segments ?? []).filter((s) => s.type === "text").map((s) => String(s.data.text)).join("");
}

describeChannelSenderConformance("MilkySender", async () => {
  const milky = await startFakeMilky({ accessToken: TOKEN });
  return {
    sender: new MilkySender({ baseUrl: milky.baseUrl, accessToken: TOKEN }),
    newTarget: friend,
    // Documents go out as uploads, each a part of its own.
    attachments: [
      { type: "document", url: "https://files.example.com/conformance-1.pdf" },
      { type: "document", url: "https://files.example.com/conformance-2.pdf", filename: "second.pdf" },
    ],
    multiPartText: Array.from({ length: 300 }, (_, i) => `Line ${i}: some **bold** words and \`code\`.`).join("\n"),
    failNext(target, on, failure) {
      milky.failNext(on === "text" ? "send_private_message" : "upload_private_file", toFakeFailure(failure), { peerId: Number(target.id) });
    },
    async delivered(target) {
      return milky.sent(Number(target.id)).map((s): DeliveredPart =>
        s.api.startsWith("send_") ? { kind: "text", platformMessageId: s.id, text: textOf(s.segments) } : { kind: "attachment", platformMessageId: `file:${s.id}` },
      );
    },
    errorCodes: { rate_limited: 429, transient: 502, permanent: -400 },
    secrets: [TOKEN],
    close: () => milky.close(),
  };
});

describe("MilkySender", () => {
  let milky: FakeMilky;
  let workspaceDir: string;
  let sender: MilkySender;

  beforeAll(async () => {
    milky = await startFakeMilky({ accessToken: TOKEN });
    workspaceDir = await mkdtemp(join(tmpdir(), "nahida-milky-ws-"));
    await mkdir(join(workspaceDir, "img"));
    await writeFile(join(workspaceDir, "img", "dot.png"), PNG);
    await writeFile(join(workspaceDir, "report.txt"), "quarterly numbers\n");
    sender = new MilkySender({ baseUrl: milky.baseUrl, accessToken: TOKEN, workspaceDir, loggedOutRetrySeconds: 7 });
  });
  afterAll(async () => {
    await milky?.close();
    await rm(workspaceDir, { recursive: true, force: true });
  });

  const progress = (): SendProgress & { ids: string[] } => {
    const ids: string[] = [];
    return { deliveryId: "test-delivery", sentParts: 0, ids, recordPart: async (_index, id) => void ids.push(id) };
  };
  const outbound = (text: string, attachments: Attachment[] = [], replyTo?: string): OutboundMessage => ({ text, attachments, extra: {}, ...(replyTo ? { replyTo } : {}) });
  const failure = (promise: Promise<unknown>) => promise.then(() => undefined, (e: unknown) => e as ChannelSendError);

  it("sends text and a photo to a group as one message: reply first, then the text as plain text, then the image", async () => {
    const chat = group();
    const p = progress();
    await sender.send(chat, outbound("**构建**失败了，看 `日志`：", [{ type: "photo", url: "https://img.example.com/a.png" }], "88231"), p);
    const [only, ...rest] = milky.sent(Number(chat.id));
    expect(rest).toEqual([]);
    expect(only!.api).toBe("send_group_message");
    expect(only!.segments).toEqual([
      { type: "reply", data: { message_seq: 88231 } },
      { type: "text", data: { text: "构建失败了，看 日志：" } },
      { type: "image", data: { uri: "https://img.example.com/a.png", sub_type: "normal" } },
    ]);
    expect(p.ids).toEqual([only!.id]);
  });

  it("splits a long answer into messages the implementation accepts, the reply on the first only", async () => {
    const chat = friend();
    const long = Array.from({ length: 400 }, (_, i) => `第 ${i} 行：一些文字，足够长以便分段。`).join("\n");
    expect(long.length).toBeGreaterThan(FAKE_MILKY_TEXT_LIMIT);
    await sender.send(chat, outbound(long, [], "5"), progress());
    const sent = milky.sent(Number(chat.id));
    expect(sent.length).toBeGreaterThan(1);
    expect(sent.map((s) => s.segments![0]!.type)).toEqual(["reply", ...sent.slice(1).map(() => "text")]);
    expect(sent.map((s) => textOf(s.segments)).join("\n")).toBe(long);
  });

  it("inlines workspace files as base64 and uploads documents under their names", async () => {
    const chat = group();
    const p = progress();
    await sender.send(chat, outbound("", [{ type: "photo", path: "img/dot.png" }, { type: "document", path: "report.txt", filename: "Report 2026.txt" }]), p);
    const [photo, upload] = milky.sent(Number(chat.id));
    expect(photo!.segments).toEqual([{ type: "image", data: { uri: `base64://${PNG.toString("base64")}`, sub_type: "normal" } }]);
    expect(upload).toMatchObject({ api: "upload_group_file", fileName: "Report 2026.txt" });
    expect(p.ids).toEqual([photo!.id, `file:${upload!.id}`]);
    const body = milky.callsTo("upload_group_file").at(-1)!.body;
    expect(body.file_uri).toBe(`base64://${Buffer.from("quarterly numbers\n").toString("base64")}`);
  });

  it("passes workspace files as file:// URIs when told the implementation shares the filesystem", async () => {
    const local = new MilkySender({ baseUrl: milky.baseUrl, accessToken: TOKEN, workspaceDir, localFiles: "file" });
    const chat = friend();
    await local.send(chat, outbound("", [{ type: "photo", path: "img/dot.png" }]), progress());
    expect(String(milky.sent(Number(chat.id))[0]!.segments![0]!.data.uri)).toMatch(/^file:\/\/\/.*\/img\/dot\.png$/);
  });

  it("fails a -400 for good with the protocol's message", async () => {
    const chat = group();
    milky.failNext("send_group_message", { retcode: -400, message: "group_id (1) 不是一个合法的群号" }, { peerId: Number(chat.id) });
    const error = await failure(sender.send(chat, outbound("hi"), progress()));
    expect(error).toMatchObject({ kind: "permanent", description: "group_id (1) 不是一个合法的群号", details: { error_code: -400 } });
  });

  it("retries later, with a clear status, while the account is logged out or the token is refused", async () => {
    const chat = friend();
    milky.failNext("send_private_message", { retcode: -403, message: "未处于登录状态" }, { peerId: Number(chat.id) });
    const loggedOut = await failure(sender.send(chat, outbound("hi"), progress()));
    expect(loggedOut).toMatchObject({ kind: "transient", details: { error_code: -403, retry_after: 7, unavailable: true } });
    expect(loggedOut!.description).toContain("not logged in");

    const wrong = new MilkySender({ baseUrl: milky.baseUrl, accessToken: "not-the-token" });
    const refused = await failure(wrong.send(chat, outbound("hi"), progress()));
    expect(refused).toMatchObject({ kind: "transient", details: { error_code: 401, retry_after: 30, unavailable: true } });
    expect(refused!.description).toContain("MILKY_ACCESS_TOKEN");
    expect(`${refused!.message} ${JSON.stringify(refused!.details)}`).not.toContain("not-the-token");
  });

  it.each([
    ["{message_seq} without time, as older implementations", "seq_only", /^\d+$/],
    ["no data at all", "none", /^unknown$/],
  ] as const)("takes status ok as accepted when the answer has %s, and sends it once", async (_label, sendAnswer, id) => {
    const older = await startFakeMilky({ accessToken: TOKEN, sendAnswer });
    try {
      const chat = group();
      const p = progress();
      await new MilkySender({ baseUrl: older.baseUrl, accessToken: TOKEN }).send(chat, outbound("hello from an older implementation"), p);
      expect(older.sent(Number(chat.id))).toHaveLength(1);
      expect(p.ids).toHaveLength(1);
      expect(p.ids[0]).toMatch(id);
    } finally {
      await older.close();
    }
  });

  it.each([
    ["milky:channel:10001", { channel: "milky", type: "channel", id: "10001" }, "no channel chats"],
    ["a thread", { channel: "milky", type: "group", id: "20001", thread: "1" }, "no threads"],
    ["a non-QQ id", { channel: "milky", type: "private", id: "-5" }, "not a QQ number"],
  ] as const)("refuses %s as permanent without calling the implementation", async (_label, target, reason) => {
    const before = milky.calls.length;
    const error = await failure(sender.send(target, outbound("hi"), progress()));
    expect(error).toMatchObject({ kind: "permanent" });
    expect(error!.description).toContain(reason);
    expect(milky.calls.length).toBe(before);
  });

  it("refuses a path outside the workspace before sending anything", async () => {
    const chat = friend();
    const error = await failure(sender.send(chat, outbound("text first", [{ type: "document", path: "../etc/passwd" }]), progress()));
    expect(error).toMatchObject({ kind: "permanent" });
    expect(milky.sent(Number(chat.id))).toEqual([]);
  });
});
