import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Event } from "@saltify/milky-types";
import type { NormalizedEvent } from "@nahida/ingress";
import { normalizeMilkyEvent } from "./milky.normalizer";

// Copied from shared/fixtures so the suite runs from a clean clone.
const FIXTURES_DIR = fileURLToPath(new URL("../../../test/fixtures/milky/", import.meta.url));
const SELF_ID = 3000000001;

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(`${FIXTURES_DIR}${name}.json`, "utf8")) as Record<string, unknown>;
}

function normalize(event: unknown, channel?: string): NormalizedEvent {
  return normalizeMilkyEvent(event, { selfId: SELF_ID, ...(channel ? { channel } : {}) });
}

function expectMessage(result: NormalizedEvent) {
  if (result.kind !== "message") throw new Error(`expected a message, got ignored: ${result.reason}`);
  return result;
}

function expectIgnored(result: NormalizedEvent): string {
  if (result.kind !== "ignored") throw new Error(`expected ignored, got ${result.kind}: ${JSON.stringify(result.kind === "message" ? result.message : result.reason)}`);
  expect(result.reason.trim()).not.toBe("");
  return result.reason;
}

/** A group message from 阿强 in 运维值班群 with the given segments. */
function groupEvent(segments: unknown[], fields: Record<string, unknown> = {}) {
  const base = fixture("group-mention-reply-image");
  return { ...base, data: { ...(base.data as object), segments, ...fields } };
}

const text = (t: string) => ({ type: "text", data: { text: t } });

describe("normalizeMilkyEvent on the fixtures", () => {
  it("makes a friend text a private message addressed to the bot", () => {
    const { message, context, dedupeKey, raw } = expectMessage(normalize(fixture("friend-text")));
    expect(message).toEqual({
      messageId: "5101",
      channel: "milky",
      chat: "milky:private:10001",
      chatDisplayName: "小明",
      sender: { id: "10001", displayName: "小明", label: "小明", roles: [], isBot: false },
      text: "早上好，今天有什么安排？",
      attachments: [],
      mentionsBot: true,
      timestamp: "2026-05-10T08:03:00.000Z",
    });
    expect(context).toEqual({ timestamp: "2026-05-10T08:03:00.000Z", channel: "milky", chatType: "private", chatDisplayName: "小明", senderLabel: "小明", roles: [] });
    expect(dedupeKey).toBe("friend:10001:5101");
    expect(raw).toEqual(fixture("friend-text"));
  });

  it("reads a group mention with a reply and an image: mention stripped, reply-to, the image as an attachment, card (nickname), admin", () => {
    const { message, context, dedupeKey } = expectMessage(normalize(fixture("group-mention-reply-image")));
    expect(message.chat).toBe("milky:group:20001");
    expect(message.chatDisplayName).toBe("运维值班群");
    expect(message.text).toBe("这张图里的错误是什么意思？");
    expect(message.mentionsBot).toBe(true);
    expect(message.replyTo).toBe("88220");
    expect(message.attachments).toEqual([{ type: "photo", fileId: "EhQxYjM0NWY2ZDc4OWFiY2RlZg" }]);
    expect(message.sender).toEqual({ id: "10002", displayName: "强哥", label: "强哥 (阿强)", roles: ["admin"], isBot: false });
    expect(context).toMatchObject({ chatType: "group", senderLabel: "强哥 (阿强)", roles: ["admin"] });
    expect(dedupeKey).toBe("group:20001:88231");
  });

  it("accepts the group fixture although its group entity omits fields newer implementations send", () => {
    // The copy in test/fixtures is shaped like an older implementation's event; the
    // protocol's strict schema refuses it, the lenient reading does not.
    expect(Event.safeParse(fixture("group-mention-reply-image")).success).toBe(false);
    expect(normalize(fixture("group-mention-reply-image")).kind).toBe("message");
  });

  it("ignores an event type it does not handle, by name", () => {
    expect(expectIgnored(normalize(fixture("unknown-event")))).toBe("friend_nudge events are not handled");
  });

  it("keeps an unknown segment as text", () => {
    const { message } = expectMessage(normalize(fixture("unknown-segment")));
    expect(message.text).toBe("看这个[holo_sticker]");
  });

  it("validates every fixture but the older-shaped one against the protocol's own schema", () => {
    for (const name of ["friend-text", "unknown-event", "unknown-segment"]) expect(Event.safeParse(fixture(name)).success, name).toBe(true);
  });
});

describe("normalizeMilkyEvent rules", () => {
  it("does not address the bot with a plain group message", () => {
    const { message } = expectMessage(normalize(groupEvent([text("大家早")])));
    expect(message.mentionsBot).toBe(false);
    expect(message.replyTo).toBeUndefined();
  });

  it("addresses the bot with a reply to one of its messages, without a mention", () => {
    const reply = { type: "reply", data: { message_seq: 7, sender_id: SELF_ID, time: 1778400000, segments: [] } };
    const { message } = expectMessage(normalize(groupEvent([reply, text("再说一遍")])));
    expect(message).toMatchObject({ mentionsBot: true, replyTo: "7", text: "再说一遍" });
  });

  it("keeps mentions of others as @name and does not address the bot with them", () => {
    const other = { type: "mention", data: { user_id: 10003, name: "小红" } };
    const all = { type: "mention_all", data: {} };
    const { message } = expectMessage(normalize(groupEvent([other, text(" 和 "), all])));
    expect(message).toMatchObject({ mentionsBot: false, text: "@小红 和 @全体成员" });
  });

  it("turns media into attachments and rich segments into short text", () => {
    const segments = [
      { type: "record", data: { resource_id: "rec-1", temp_url: "", duration: 3 } },
      { type: "video", data: { resource_id: "vid-1", temp_url: "", width: 1, height: 1, duration: 1 } },
      { type: "file", data: { file_id: "file-1", file_name: "报告.pdf", file_size: 10 } },
      { type: "face", data: { face_id: "14", is_large: false } },
      { type: "market_face", data: { emoji_package_id: 1, emoji_id: "e", key: "k", summary: "[哈哈]", url: "" } },
      { type: "forward", data: { forward_id: "f", title: "群聊的聊天记录", preview: [], summary: "" } },
      { type: "light_app", data: { app_name: "哔哩哔哩", json_payload: "{}" } },
      { type: "xml", data: { service_id: 1, xml_payload: "<x/>" } },
    ];
    const { message } = expectMessage(normalize(groupEvent(segments)));
    expect(message.attachments).toEqual([
      { type: "audio", fileId: "rec-1" },
      { type: "video", fileId: "vid-1" },
      { type: "document", fileId: "file-1", filename: "报告.pdf" },
    ]);
    expect(message.text).toBe("[face 14][哈哈][forwarded messages: 群聊的聊天记录][mini program: 哔哩哔哩][xml card]");
  });

  it("reads a sender without a card as the nickname, and a member role as no tag", () => {
    const member = { user_id: 10004, nickname: "老王", card: "", role: "member" };
    const { message } = expectMessage(normalize(groupEvent([text("hi")], { sender_id: 10004, group_member: member })));
    expect(message.sender).toMatchObject({ label: "老王", displayName: "老王", roles: [] });
  });

  it("answers a temp chat privately, named by the sender id", () => {
    const event = { time: 1778400000, self_id: SELF_ID, event_type: "message_receive", data: { message_scene: "temp", peer_id: 10009, message_seq: 3, sender_id: 10009, time: 1778400000, segments: [text("你好")] } };
    const { message, dedupeKey } = expectMessage(normalize(event));
    expect(message).toMatchObject({ chat: "milky:private:10009", sender: { id: "10009", label: "10009" }, mentionsBot: true });
    expect(dedupeKey).toBe("temp:10009:3");
  });

  it("uses the instance name as the channel", () => {
    expect(expectMessage(normalize(fixture("friend-text"), "qq_ops")).message.chat).toBe("qq_ops:private:10001");
  });

  it.each([
    ["another account's event", { ...fixture("friend-text"), self_id: 3000000002 }, "event is for account 3000000002"],
    ["the bot's own message", groupEvent([text("我说的")], { sender_id: SELF_ID }), "sent by this account itself"],
    ["a message of only blanks", groupEvent([text("  ")]), "no text or supported media"],
    ["a message of only a self-mention", groupEvent([{ type: "mention", data: { user_id: SELF_ID, name: "Nahida" } }]), "no text or supported media"],
    ["a scene newer than this code", groupEvent([text("x")], { message_scene: "channel" }), 'message scene "channel"'],
  ])("ignores %s with a reason", (_label, event, reason) => {
    expect(expectIgnored(normalize(event))).toContain(reason);
  });

  it.each([
    ["a message without message_seq", groupEvent([text("x")], { message_seq: undefined }), "message_seq"],
    ["a non-QQ self_id", { ...fixture("friend-text"), self_id: 5 }, "self_id"],
    ["an array", [fixture("friend-text")], "not an object"],
  ])("takes %s as unreadable, with a reason and the event, for the quarantine", (_label, event, reason) => {
    const result = normalize(event);
    if (result.kind !== "unreadable") throw new Error(`expected unreadable, got ${result.kind}`);
    expect(result.reason).toContain(reason);
    expect(result.raw).toEqual(event);
  });

  it("keeps a malformed media segment as a placeholder rather than losing the message", () => {
    const { message } = expectMessage(normalize(groupEvent([text("看"), { type: "image", data: { resource_id: "" } }])));
    expect(message.text).toBe("看[image]");
    expect(message.attachments).toEqual([]);
  });
});
