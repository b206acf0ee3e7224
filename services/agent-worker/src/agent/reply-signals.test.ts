import { describe, expect, it } from "vitest";
import { applyReplySignals, isHeartbeatAck, isJsonNoReply, isSilentReply, stripTrailingNoReply } from "./reply-signals";

describe("isSilentReply", () => {
  it.each(["NO_REPLY", "  NO_REPLY\n", "no_reply", "No_Reply", "\tNO_REPLY\r\n"])("matches %j", (text) => {
    expect(isSilentReply(text)).toBe(true);
  });

  it.each([
    "NO_REPLY.",
    "NO_REPLY!",
    "`NO_REPLY`",
    "**NO_REPLY**",
    '"NO_REPLY"',
    "NO REPLY",
    "NOREPLY",
    "NO_REPLY NO_REPLY",
    "I will NO_REPLY later",
    "Hello\nNO_REPLY",
    "",
  ])("does not match %j", (text) => {
    expect(isSilentReply(text)).toBe(false);
  });
});

describe("isJsonNoReply", () => {
  it.each([
    '{"action":"NO_REPLY"}',
    ' { "action" : "no_reply" } ',
    '{"action":" NO_REPLY ","reason":"not addressed to me"}',
    '```json\n{"action":"NO_REPLY"}\n```',
    '```JSON\n{\n  "action": "NO_REPLY"\n}\n```',
    '```\n{"action":"NO_REPLY"}\n```',
    '```json {"action":"NO_REPLY"}```',
    '\n```json\r\n{"action":"NO_REPLY"}\r\n```\n',
  ])("matches %j", (text) => {
    expect(isJsonNoReply(text)).toBe(true);
  });

  it.each([
    '{"action":"reply","text":"hi"}',
    '{"action":"NO_REPLY."}',
    '{"Action":"NO_REPLY"}',
    '{"action":true}',
    '{"action":["NO_REPLY"]}',
    '{"reply":{"action":"NO_REPLY"}}',
    '[{"action":"NO_REPLY"}]',
    '"NO_REPLY"',
    "null",
    '{"action":"NO_REPLY"',
    'Sure: {"action":"NO_REPLY"}',
    '{"action":"NO_REPLY"} and more',
    '```python\n{"action":"NO_REPLY"}\n```',
    '```json\n{"action":"NO_REPLY"}\n```\nbut also this',
    "NO_REPLY",
  ])("does not match %j", (text) => {
    expect(isJsonNoReply(text)).toBe(false);
  });
});

describe("stripTrailingNoReply", () => {
  it.each([
    ["Done.\nNO_REPLY", "Done."],
    ["Done.\n\nNO_REPLY\n", "Done."],
    ["Done.\r\nNO_REPLY\r\n", "Done."],
    ["Done.\n  no_reply  ", "Done."],
    ["Done.\nNO_REPLY\nNO_REPLY", "Done."],
    ["  indented\nkept   \nNO_REPLY", "  indented\nkept"],
    ["NO_REPLY", ""],
  ])("%j → %j", (text, expected) => {
    expect(stripTrailingNoReply(text)).toBe(expected);
  });

  it.each([
    "Done.",
    "Done. NO_REPLY",
    "Done.\nNO_REPLY.",
    "NO_REPLY\nDone.",
    "Done.\nwill NO_REPLY",
    "text with trailing spaces   ",
    "\n\n",
  ])("leaves %j unchanged", (text) => {
    expect(stripTrailingNoReply(text)).toBe(text);
  });
});

describe("isHeartbeatAck", () => {
  it.each(["HEARTBEAT_OK", " HEARTBEAT_OK\n", "heartbeat_ok"])("matches %j", (text) => {
    expect(isHeartbeatAck(text)).toBe(true);
  });

  it.each(["HEARTBEAT_OK.", "HEARTBEAT OK", "All good. HEARTBEAT_OK", "HEARTBEAT_OK\nall good"])("does not match %j", (text) => {
    expect(isHeartbeatAck(text)).toBe(false);
  });
});

describe("applyReplySignals", () => {
  describe("rule 1: exact NO_REPLY", () => {
    it.each(["NO_REPLY", "no_reply", "  No_Reply \n"])("suppresses %j as no_reply", (text) => {
      expect(applyReplySignals(text)).toEqual({ action: "suppress", reason: "no_reply" });
    });
  });

  describe("rule 2: JSON action NO_REPLY", () => {
    it.each(['{"action":"NO_REPLY"}', '```json\n{"action":"no_reply","why":"small talk"}\n```'])("suppresses %j", (text) => {
      expect(applyReplySignals(text)).toEqual({ action: "suppress", reason: "no_reply" });
    });

    it("sends JSON with another action as is", () => {
      const text = '{"action":"reply","text":"hi"}';
      expect(applyReplySignals(text)).toEqual({ action: "send", text });
    });
  });

  describe("rule 3: trailing NO_REPLY line", () => {
    it("strips the line and sends the rest", () => {
      expect(applyReplySignals("I noted that for later.\nNO_REPLY")).toEqual({ action: "send", text: "I noted that for later." });
    });

    it("trims only the end of what remains", () => {
      expect(applyReplySignals("\n  - item\n\nNO_REPLY\n\n")).toEqual({ action: "send", text: "\n  - item" });
    });

    it("suppresses when only NO_REPLY lines and blank lines remain", () => {
      expect(applyReplySignals("\n\nNO_REPLY\nno_reply\n")).toEqual({ action: "suppress", reason: "no_reply" });
    });

    it("does not re-apply the other rules to the remainder", () => {
      expect(applyReplySignals("HEARTBEAT_OK\nNO_REPLY")).toEqual({ action: "send", text: "HEARTBEAT_OK" });
    });
  });

  describe("rule 4: HEARTBEAT_OK", () => {
    it.each(["HEARTBEAT_OK", " heartbeat_ok\n"])("suppresses %j as heartbeat", (text) => {
      expect(applyReplySignals(text)).toEqual({ action: "suppress", reason: "heartbeat" });
    });

    it("sends a heartbeat report that says more than the token", () => {
      const text = "Disk is 95% full.\nHEARTBEAT_OK";
      expect(applyReplySignals(text)).toEqual({ action: "send", text });
    });
  });

  describe("rule 5: everything else is sent as is", () => {
    it.each([
      "I will NO_REPLY later",
      "NO_REPLY is the token I use to stay silent.",
      "NO_REPLY.",
      "NO_REPLY\nActually, one more thing.",
      "Done. NO_REPLY",
      "`NO_REPLY`",
      "  leading and trailing whitespace kept  \n",
    ])("sends %j unchanged", (text) => {
      expect(applyReplySignals(text)).toEqual({ action: "send", text });
    });
  });

  describe("empty final text", () => {
    it.each(["", " ", "\n\t\r\n"])("suppresses %j as empty", (text) => {
      expect(applyReplySignals(text)).toEqual({ action: "suppress", reason: "empty" });
    });
  });

  it("applies the rules in SPEC order", () => {
    // Rule 1 answers before rule 3 could strip; rule 2 needs the JSON to be the whole text.
    expect(applyReplySignals("NO_REPLY\n")).toEqual({ action: "suppress", reason: "no_reply" });
    expect(applyReplySignals('{"action":"NO_REPLY"}\nNO_REPLY')).toEqual({ action: "send", text: '{"action":"NO_REPLY"}' });
  });
});
