import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { Update } from "grammy/types";
import { InboundMessage, MessageContext, parseChatAddress } from "@nahida/contracts";
import {
  INVALID_UPDATE_DEDUPE_KEY,
  normalizeUpdate,
  type NormalizeResult,
  type NormalizedMessage,
  type NormalizeUpdateOptions,
} from "./telegram.normalizer";

// Copied from shared/fixtures so the suite runs from a clean clone.
const FIXTURES_DIR = fileURLToPath(new URL("../../../test/fixtures/telegram/", import.meta.url));
const BOT = { id: 7000000001, username: "nahida_test_bot" };

function fixture(name: string): Update {
  return JSON.parse(readFileSync(`${FIXTURES_DIR}${name}.json`, "utf8")) as Update;
}

/** Garbage and hand-built updates do not match the grammY types; the normalizer must cope anyway. */
function loose(value: unknown): Update {
  return value as Update;
}

function normalize(update: Update | Record<string, unknown>, options?: NormalizeUpdateOptions): NormalizeResult {
  return normalizeUpdate(loose(update), BOT, options);
}

function expectMessage(result: NormalizeResult): NormalizedMessage {
  if (result.kind !== "message") throw new Error(`expected a message, got ignored: ${result.reason}`);
  return result;
}

const ALICE = { id: 123456789, is_bot: false, first_name: "Alice", username: "alice_l" };
const BOB = { id: 555000111, is_bot: false, first_name: "Bob", username: "bobby" };
const BOT_USER = { id: 7000000001, is_bot: true, first_name: "Nahida", username: "nahida_test_bot" };
const OPS_ROOM = { id: -1001987654321, title: "Ops room", type: "supergroup" };
const FORUM = { id: -1001555000333, title: "Team forum", type: "supergroup", is_forum: true };

/** A group text message from Bob; `fields` override or extend the message. */
function groupMessage(fields: Record<string, unknown>, updateId = 900) {
  return {
    update_id: updateId,
    message: { message_id: 1, from: BOB, chat: OPS_ROOM, date: 1778400000, text: "hello", ...fields },
  };
}

/** Text with a `bot_command` entity covering the first word, as Telegram sends it. */
function commandMessage(text: string) {
  const length = text.split(" ")[0]!.length;
  return groupMessage({ text, entities: [{ offset: 0, length, type: "bot_command" }] });
}

describe("normalizeUpdate on the shared fixtures", () => {
  const expectations: Record<string, "message" | "ignored"> = {
    "private-text": "message",
    "group-command-with-botname": "message",
    "group-mention": "message",
    "forum-topic-reply": "message",
    "photo-caption": "message",
    "edited-message": "ignored",
    "callback-query": "ignored",
  };

  it("covers every fixture in the directory", () => {
    const names = readdirSync(FIXTURES_DIR)
      .filter((f) => f.endsWith(".json"))
      .map((f) => f.slice(0, -".json".length))
      .sort();
    expect(names).toEqual(Object.keys(expectations).sort());
  });

  for (const [name, kind] of Object.entries(expectations)) {
    it(`${name}: ${kind}, keyed by update_id, never throws`, () => {
      const update = fixture(name);
      const result = normalizeUpdate(update, BOT);
      expect(result.kind).toBe(kind);
      expect(result.dedupeKey).toBe(`update:${update.update_id}`);
      if (result.kind === "message") {
        expect(() => InboundMessage.parse(result.message)).not.toThrow();
        expect(() => MessageContext.parse(result.context)).not.toThrow();
        expect(parseChatAddress(result.message.chat).ok).toBe(true);
        expect(result.isCommand).toBe(result.command !== undefined);
        // The raw update stays with the caller.
        expect(JSON.stringify(result)).not.toContain("update_id");
        expect(result.message).not.toHaveProperty("raw");
      }
    });
  }

  it("private-text: a private chat addresses the bot", () => {
    const result = expectMessage(normalizeUpdate(fixture("private-text"), BOT));
    expect(result).toEqual({
      kind: "message",
      dedupeKey: "update:814200001",
      isCommand: false,
      message: {
        messageId: "17",
        channel: "telegram",
        chat: "telegram:private:123456789",
        chatDisplayName: "Alice Liddell",
        sender: { id: "123456789", displayName: "Alice Liddell", label: "Alice", roles: [], isBot: false },
        text: "Hi! What can you do?",
        attachments: [],
        mentionsBot: true,
        timestamp: "2026-05-10T08:03:00.000Z",
      },
      context: {
        timestamp: "2026-05-10T08:03:00.000Z",
        channel: "telegram",
        chatType: "private",
        chatDisplayName: "Alice Liddell",
        senderLabel: "Alice",
        roles: [],
      },
    });
  });

  it("group-command-with-botname: a supergroup is a group, the command is ours", () => {
    const result = expectMessage(normalizeUpdate(fixture("group-command-with-botname"), BOT));
    expect(result.message.chat).toBe("telegram:group:-1001987654321");
    expect(result.message.chatDisplayName).toBe("Ops room");
    expect(result.context.chatType).toBe("group");
    expect(result.isCommand).toBe(true);
    expect(result.command).toEqual({ name: "status", args: "", addressedToOther: false });
    expect(result.message.mentionsBot).toBe(true);
    expect(result.message.text).toBe("/status@nahida_test_bot");
  });

  it("group-mention: a leading @mention addresses the bot", () => {
    const result = expectMessage(normalizeUpdate(fixture("group-mention"), BOT));
    expect(result.message.mentionsBot).toBe(true);
    expect(result.isCommand).toBe(false);
    expect(result.command).toBeUndefined();
    expect(result.message.sender).toMatchObject({ id: "555000111", displayName: "Bob", label: "Bob" });
  });

  it("forum-topic-reply: the topic is the thread, the reply to the bot addresses it", () => {
    const result = expectMessage(normalizeUpdate(fixture("forum-topic-reply"), BOT));
    expect(result.message.chat).toBe("telegram:group:-1001555000333:42");
    expect(result.message.replyTo).toBe("1200");
    expect(result.message.mentionsBot).toBe(true);
    expect(result.message.sender).toEqual({ id: "555000222", displayName: "Chen Wei", label: "Chen", roles: [], isBot: false });
    expect(result.context.chatDisplayName).toBe("Team forum");
  });

  it("photo-caption: the caption is the text, the largest size is the attachment", () => {
    const result = expectMessage(normalizeUpdate(fixture("photo-caption"), BOT));
    expect(result.message.text).toBe("what is in this chart?");
    expect(result.message.attachments).toEqual([
      { type: "photo", fileId: "AgACAgIAAxkBAAMSaAAAlarge", caption: "what is in this chart?" },
    ]);
  });

  it("edited-message and callback-query say why they are ignored", () => {
    expect(normalizeUpdate(fixture("edited-message"), BOT)).toEqual({
      kind: "ignored",
      dedupeKey: "update:814200006",
      reason: "edited_message updates are not handled",
    });
    expect(normalizeUpdate(fixture("callback-query"), BOT)).toEqual({
      kind: "ignored",
      dedupeKey: "update:814200007",
      reason: "callback_query updates are not handled",
    });
  });
});

describe("chat addresses", () => {
  it("a basic group is a group", () => {
    const result = expectMessage(normalize(groupMessage({ chat: { id: -4000123, title: "Small group", type: "group" } })));
    expect(result.message.chat).toBe("telegram:group:-4000123");
    expect(result.context).toMatchObject({ chatType: "group", chatDisplayName: "Small group" });
  });

  it("a channel post is a channel, sent on behalf of the channel", () => {
    const channel = { id: -1002000000001, title: "Announcements", type: "channel" };
    const result = expectMessage(
      normalize({
        update_id: 901,
        channel_post: { message_id: 5, sender_chat: channel, chat: channel, date: 1778400000, text: "release 1.2 is out" },
      }),
    );
    expect(result.message.chat).toBe("telegram:channel:-1002000000001");
    expect(result.message.sender).toEqual({
      id: "-1002000000001",
      displayName: "Announcements",
      label: "Announcements",
      roles: [],
      isBot: false,
    });
    expect(result.message.mentionsBot).toBe(false);
    expect(result.context).toMatchObject({ chatType: "channel", chatDisplayName: "Announcements", senderLabel: "Announcements" });
  });

  it("a channel post without sender_chat falls back to the channel itself", () => {
    const channel = { id: -1002000000001, title: "Announcements", type: "channel" };
    const result = expectMessage(
      normalize({ update_id: 902, channel_post: { message_id: 6, chat: channel, date: 1778400000, text: "hi" } }),
    );
    expect(result.message.sender.id).toBe("-1002000000001");
  });

  it("a channel post without text or media (service message) is ignored", () => {
    const channel = { id: -1002000000001, title: "Announcements", type: "channel" };
    const result = normalize({
      update_id: 903,
      channel_post: { message_id: 7, sender_chat: channel, chat: channel, date: 1778400000, pinned_message: { message_id: 5 } },
    });
    expect(result).toEqual({ kind: "ignored", dedupeKey: "update:903", reason: "channel_post has no text or supported media" });
  });

  it("message_thread_id is not a topic unless is_topic_message (reply threads in plain groups)", () => {
    const result = expectMessage(
      normalize(
        groupMessage({
          message_thread_id: 880,
          reply_to_message: { message_id: 880, from: ALICE, chat: OPS_ROOM, date: 1778300000, text: "root" },
        }),
      ),
    );
    expect(result.message.chat).toBe("telegram:group:-1001987654321");
    // A reply to a thread's root in a plain group is a real reply.
    expect(result.message.replyTo).toBe("880");
  });

  it("a topic message without an explicit reply: thread set, the topic root is not a reply", () => {
    const topicRoot = {
      message_id: 42,
      message_thread_id: 42,
      from: BOT_USER,
      chat: FORUM,
      date: 1778300000,
      forum_topic_created: { name: "Deploys", icon_color: 7322096 },
      is_topic_message: true,
    };
    const result = expectMessage(
      normalize(
        groupMessage({ chat: FORUM, message_thread_id: 42, is_topic_message: true, reply_to_message: topicRoot, text: "status?" }),
      ),
    );
    expect(result.message.chat).toBe("telegram:group:-1001555000333:42");
    expect(result.message.replyTo).toBeUndefined();
    // The bot created the topic, but a plain message in it does not address the bot.
    expect(result.message.mentionsBot).toBe(false);
  });

  it("a general-topic message in a forum has no thread", () => {
    const result = expectMessage(normalize(groupMessage({ chat: FORUM })));
    expect(result.message.chat).toBe("telegram:group:-1001555000333");
  });
});

describe("commands", () => {
  it("/status is addressed to the bot", () => {
    const result = expectMessage(normalize(commandMessage("/status")));
    expect(result.isCommand).toBe(true);
    expect(result.command).toEqual({ name: "status", args: "", addressedToOther: false });
    expect(result.message.mentionsBot).toBe(true);
  });

  it("/status@otherbot is a command for another bot and does not address ours", () => {
    const result = expectMessage(normalize(commandMessage("/status@otherbot")));
    expect(result.isCommand).toBe(true);
    expect(result.command).toEqual({ name: "status", args: "", addressedToOther: true });
    expect(result.message.mentionsBot).toBe(false);
  });

  it("/cmd@otherbot stays not-for-us even in a private chat", () => {
    const result = expectMessage(
      normalize({
        update_id: 910,
        message: {
          message_id: 3,
          from: ALICE,
          chat: { id: 123456789, first_name: "Alice", type: "private" },
          date: 1778400000,
          text: "/start@otherbot",
          entities: [{ offset: 0, length: 15, type: "bot_command" }],
        },
      }),
    );
    expect(result.command?.addressedToOther).toBe(true);
    expect(result.message.mentionsBot).toBe(false);
  });

  it("the name is lower-cased without @botname, matched case-insensitively, args trimmed", () => {
    const result = expectMessage(normalize(commandMessage("/Model@NAHIDA_TEST_BOT   gpt-5  mini ")));
    expect(result.command).toEqual({ name: "model", args: "gpt-5  mini", addressedToOther: false });
    expect(result.message.mentionsBot).toBe(true);
  });

  it("args may span lines", () => {
    const result = expectMessage(normalize(commandMessage("/cron list\nall")));
    expect(result.command).toEqual({ name: "cron", args: "list\nall", addressedToOther: false });
  });

  it("a bot_command later in the text is not a command", () => {
    const result = expectMessage(normalize(groupMessage({ text: "try /status", entities: [{ offset: 4, length: 7, type: "bot_command" }] })));
    expect(result.isCommand).toBe(false);
    expect(result.command).toBeUndefined();
    expect(result.message.mentionsBot).toBe(false);
  });

  it("a leading slash without a bot_command entity is not a command", () => {
    const result = expectMessage(normalize(groupMessage({ text: "/status" })));
    expect(result.isCommand).toBe(false);
  });

  it("a command in a photo caption is read from caption_entities", () => {
    const result = expectMessage(
      normalize(
        groupMessage({
          text: undefined,
          photo: [{ file_id: "p1", file_unique_id: "u1", width: 10, height: 10 }],
          caption: "/describe please",
          caption_entities: [{ offset: 0, length: 9, type: "bot_command" }],
        }),
      ),
    );
    expect(result.command).toEqual({ name: "describe", args: "please", addressedToOther: false });
  });
});

describe("mentionsBot", () => {
  it("matches @username case-insensitively, anywhere in the text", () => {
    const upper = expectMessage(normalize(groupMessage({ text: "@Nahida_Test_Bot hi", entities: [{ offset: 0, length: 16, type: "mention" }] })));
    expect(upper.message.mentionsBot).toBe(true);
    const later = expectMessage(
      normalize(groupMessage({ text: "hey @NAHIDA_TEST_BOT, look", entities: [{ offset: 4, length: 16, type: "mention" }] })),
    );
    expect(later.message.mentionsBot).toBe(true);
  });

  it("a mention of another user does not address the bot", () => {
    const result = expectMessage(normalize(groupMessage({ text: "@bobby hi", entities: [{ offset: 0, length: 6, type: "mention" }] })));
    expect(result.message.mentionsBot).toBe(false);
  });

  it("a mention whose handle only starts with the bot's name does not count", () => {
    const result = expectMessage(
      normalize(groupMessage({ text: "@nahida_test_bot2 hi", entities: [{ offset: 0, length: 17, type: "mention" }] })),
    );
    expect(result.message.mentionsBot).toBe(false);
  });

  it("offsets are UTF-16 code units, as Telegram counts them", () => {
    const result = expectMessage(
      normalize(groupMessage({ text: "🙂 @nahida_test_bot", entities: [{ offset: 3, length: 16, type: "mention" }] })),
    );
    expect(result.message.mentionsBot).toBe(true);
  });

  it("a text_mention of the bot's id addresses it", () => {
    const result = expectMessage(
      normalize(groupMessage({ text: "Nahida, help", entities: [{ offset: 0, length: 6, type: "text_mention", user: BOT_USER }] })),
    );
    expect(result.message.mentionsBot).toBe(true);
  });

  it("a mention in a caption counts", () => {
    const result = expectMessage(
      normalize(
        groupMessage({
          text: undefined,
          document: { file_id: "d1", file_unique_id: "u", file_name: "log.txt", mime_type: "text/plain" },
          caption: "@nahida_test_bot read this",
          caption_entities: [{ offset: 0, length: 16, type: "mention" }],
        }),
      ),
    );
    expect(result.message.mentionsBot).toBe(true);
  });

  it("a reply to the bot in a group addresses it", () => {
    const result = expectMessage(
      normalize(
        groupMessage({
          message_id: 950,
          text: "and yesterday?",
          reply_to_message: { message_id: 949, from: BOT_USER, chat: OPS_ROOM, date: 1778399000, text: "12 alerts today." },
        }),
      ),
    );
    expect(result.message.replyTo).toBe("949");
    expect(result.message.mentionsBot).toBe(true);
  });

  it("a reply to someone else keeps replyTo but does not address the bot", () => {
    const result = expectMessage(
      normalize(groupMessage({ reply_to_message: { message_id: 948, from: ALICE, chat: OPS_ROOM, date: 1778399000, text: "hm" } })),
    );
    expect(result.message.replyTo).toBe("948");
    expect(result.message.mentionsBot).toBe(false);
  });

  it("plain group chatter does not address the bot", () => {
    expect(expectMessage(normalize(groupMessage({}))).message.mentionsBot).toBe(false);
  });
});

describe("attachments", () => {
  it("photo: picks the largest area regardless of order, file_size breaks ties", () => {
    const result = expectMessage(
      normalize(
        groupMessage({
          text: undefined,
          photo: [
            { file_id: "big-a", file_unique_id: "a", width: 800, height: 600, file_size: 100 },
            { file_id: "small", file_unique_id: "s", width: 90, height: 67, file_size: 1320 },
            { file_id: "big-b", file_unique_id: "b", width: 600, height: 800, file_size: 200 },
          ],
        }),
      ),
    );
    expect(result.message.text).toBe("");
    expect(result.message.attachments).toEqual([{ type: "photo", fileId: "big-b" }]);
  });

  it("document keeps filename and mime type", () => {
    const result = expectMessage(
      normalize(
        groupMessage({
          text: undefined,
          caption: "the report",
          document: { file_id: "BQACAgIAAxkBdoc", file_unique_id: "u", file_name: "report.pdf", mime_type: "application/pdf", file_size: 52011 },
        }),
      ),
    );
    expect(result.message.text).toBe("the report");
    expect(result.message.attachments).toEqual([
      { type: "document", fileId: "BQACAgIAAxkBdoc", filename: "report.pdf", mimeType: "application/pdf", caption: "the report" },
    ]);
  });

  it("a long document name is cut to the contract's limit instead of dropping the message", () => {
    const result = expectMessage(
      normalize(groupMessage({ text: undefined, document: { file_id: "d", file_unique_id: "u", file_name: `${"x".repeat(300)}.txt` } })),
    );
    expect(result.message.attachments[0]?.filename).toHaveLength(255);
  });

  it("audio and voice become audio", () => {
    const audio = expectMessage(
      normalize(groupMessage({ text: undefined, audio: { file_id: "au", file_unique_id: "u", duration: 3, file_name: "song.mp3", mime_type: "audio/mpeg" } })),
    );
    expect(audio.message.attachments).toEqual([{ type: "audio", fileId: "au", filename: "song.mp3", mimeType: "audio/mpeg" }]);
    const voice = expectMessage(
      normalize(groupMessage({ text: undefined, voice: { file_id: "vo", file_unique_id: "u", duration: 2, mime_type: "audio/ogg" } })),
    );
    expect(voice.message.attachments).toEqual([{ type: "audio", fileId: "vo", mimeType: "audio/ogg" }]);
  });

  it("video and animation become video; an animation's document copy is not a second attachment", () => {
    const video = expectMessage(
      normalize(groupMessage({ text: undefined, video: { file_id: "vi", file_unique_id: "u", width: 1, height: 1, duration: 1, mime_type: "video/mp4" } })),
    );
    expect(video.message.attachments).toEqual([{ type: "video", fileId: "vi", mimeType: "video/mp4" }]);
    const gif = { file_id: "an", file_unique_id: "u", width: 1, height: 1, duration: 1, file_name: "fun.mp4", mime_type: "video/mp4" };
    const animation = expectMessage(normalize(groupMessage({ text: undefined, animation: gif, document: gif })));
    expect(animation.message.attachments).toEqual([{ type: "video", fileId: "an", filename: "fun.mp4", mimeType: "video/mp4" }]);
  });

  it("a sticker alone is not supported content", () => {
    const result = normalize(groupMessage({ text: undefined, sticker: { file_id: "st", file_unique_id: "u", type: "regular", width: 1, height: 1 } }));
    expect(result).toMatchObject({ kind: "ignored", reason: "message has no text or supported media" });
  });

  it("a malformed photo array drops only the bad sizes", () => {
    const result = expectMessage(normalize(groupMessage({ photo: [null, { file_id: "ok", width: 2, height: 2 }, { width: 9, height: 9 }] })));
    expect(result.message.attachments).toEqual([{ type: "photo", fileId: "ok" }]);
  });
});

describe("senders", () => {
  it("an anonymous group admin is the group (sender_chat), not GroupAnonymousBot", () => {
    const result = expectMessage(
      normalize(
        groupMessage({
          from: { id: 1087968824, is_bot: true, first_name: "Group", username: "GroupAnonymousBot" },
          sender_chat: OPS_ROOM,
        }),
      ),
    );
    expect(result.message.sender).toEqual({ id: "-1001987654321", displayName: "Ops room", label: "Ops room", roles: [], isBot: false });
  });

  it("a group message with neither from nor sender_chat is ignored", () => {
    expect(normalize(groupMessage({ from: undefined }))).toEqual({ kind: "ignored", dedupeKey: "update:900", reason: "message has no sender" });
  });

  it("label falls back to the username, then the id; other bots are flagged", () => {
    const noName = expectMessage(normalize(groupMessage({ from: { id: 42, is_bot: true, first_name: " ", username: "helper_bot" } })));
    expect(noName.message.sender).toEqual({ id: "42", displayName: "helper_bot", label: "helper_bot", roles: [], isBot: true });
    const bare = expectMessage(normalize(groupMessage({ from: { id: 43, is_bot: false, first_name: "" } })));
    expect(bare.message.sender).toMatchObject({ displayName: "43", label: "43" });
  });

  it("roles come from rolesFor and reach both the message and the context", () => {
    const calls: [string, string][] = [];
    const rolesFor = (chatId: string, senderId: string) => {
      calls.push([chatId, senderId]);
      return ["admin", "admin", "", "x".repeat(40), "owner"];
    };
    const result = expectMessage(normalize(fixture("group-mention"), { rolesFor }));
    expect(calls).toEqual([["-1001987654321", "555000111"]]);
    expect(result.message.sender.roles).toEqual(["admin", "owner"]);
    expect(result.context.roles).toEqual(["admin", "owner"]);
  });

  it("a throwing rolesFor loses the roles, not the message", () => {
    const result = expectMessage(
      normalize(fixture("group-mention"), {
        rolesFor: () => {
          throw new Error("cache down");
        },
      }),
    );
    expect(result.message.sender.roles).toEqual([]);
  });
});

describe("ignored updates and garbage never throw", () => {
  const cases: [string, unknown, string][] = [
    ["{}", {}, INVALID_UPDATE_DEDUPE_KEY],
    ["null", null, INVALID_UPDATE_DEDUPE_KEY],
    ["a string", "update", INVALID_UPDATE_DEDUPE_KEY],
    ["an array", [1, 2], INVALID_UPDATE_DEDUPE_KEY],
    ["a string update_id", { update_id: "5", message: {} }, INVALID_UPDATE_DEDUPE_KEY],
    ["a fractional update_id", { update_id: 1.5 }, INVALID_UPDATE_DEDUPE_KEY],
    ["{update_id: 1}", { update_id: 1 }, "update:1"],
    ["a message with no chat", { update_id: 2, message: { message_id: 1, date: 1778400000, from: ALICE, text: "hi" } }, "update:2"],
    ["a message that is a string", { update_id: 3, message: "hi" }, "update:3"],
    ["a message that is null", { update_id: 4, message: null }, "update:4"],
    ["an unknown chat type", { update_id: 5, message: { message_id: 1, date: 1778400000, from: ALICE, chat: { id: 1, type: "sender" }, text: "hi" } }, "update:5"],
    ["a date past year 9999", { update_id: 6, message: { message_id: 1, date: 1e15, from: ALICE, chat: { id: 1, type: "private" }, text: "hi" } }, "update:6"],
    ["a negative date", { update_id: 7, message: { message_id: 1, date: -1, from: ALICE, chat: { id: 1, type: "private" }, text: "hi" } }, "update:7"],
    ["my_chat_member", { update_id: 8, my_chat_member: { chat: OPS_ROOM, from: ALICE, date: 1, old_chat_member: {}, new_chat_member: {} } }, "update:8"],
    ["a new_chat_members service message", { update_id: 9, message: { message_id: 2, from: BOB, chat: OPS_ROOM, date: 1778400000, new_chat_members: [ALICE] } }, "update:9"],
    ["a forum_topic_created service message", { update_id: 10, message: { message_id: 42, message_thread_id: 42, is_topic_message: true, from: BOB, chat: FORUM, date: 1778400000, forum_topic_created: { name: "x", icon_color: 1 } } }, "update:10"],
    ["business_message", { update_id: 11, business_message: { message_id: 1, from: ALICE, chat: { id: 1, type: "private" }, date: 1778400000, text: "hi" } }, "update:11"],
    ["edited_channel_post", { update_id: 12, edited_channel_post: { message_id: 1, chat: { id: -1, type: "channel" }, date: 1778400000, edit_date: 1778400001, text: "x" } }, "update:12"],
  ];

  for (const [name, input, dedupeKey] of cases) {
    it(`${name} is ignored with a reason`, () => {
      let result: NormalizeResult | undefined;
      expect(() => {
        result = normalizeUpdate(loose(input), BOT);
      }).not.toThrow();
      expect(result).toMatchObject({ kind: "ignored", dedupeKey });
      expect(result?.kind === "ignored" && result.reason.length > 0).toBe(true);
    });
  }

  it("a message with no chat names the missing field", () => {
    const result = normalize({ update_id: 2, message: { message_id: 1, date: 1778400000, from: ALICE, text: "hi" } });
    expect(result.kind === "ignored" && result.reason).toMatch(/^malformed message: chat/);
  });

  it("malformed optional parts are dropped, not fatal", () => {
    const result = expectMessage(
      normalize(
        groupMessage({
          text: "@nahida_test_bot hi",
          entities: [{ offset: "x" }, { offset: 0, length: 16, type: "mention" }, 7],
          reply_to_message: "nope",
          document: { file_name: "missing id" },
          message_thread_id: "42",
          caption_entities: "not an array",
        }),
      ),
    );
    expect(result.message.mentionsBot).toBe(true);
    expect(result.message.replyTo).toBeUndefined();
    expect(result.message.attachments).toEqual([]);
    expect(result.message.chat).toBe("telegram:group:-1001987654321");
  });

  it("dedupe keys are the update_id, independent of order", () => {
    expect(normalize(groupMessage({}, 5)).dedupeKey).toBe("update:5");
    expect(normalize(groupMessage({}, 3)).dedupeKey).toBe("update:3");
    expect(normalize(groupMessage({}, 5)).dedupeKey).toBe("update:5");
  });
});
