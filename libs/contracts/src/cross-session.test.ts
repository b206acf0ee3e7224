import { describe, expect, it } from "vitest";
import { SendPolicy, checkSendPolicy, parseMessageTarget } from "./cross-session";

describe("checkSendPolicy", () => {
  const policy = SendPolicy.parse({
    default: "allow",
    rules: [
      { effect: "allow", channel: "telegram", chat_type: "group", session_prefix: "aaaa" },
      { effect: "deny", channel: "telegram", chat_type: "group" },
      { effect: "deny", session_prefix: "bbbb" },
    ],
  });
  const group = { channel: "telegram", chatType: "group" as const, chatOverride: null };

  it("takes the first matching rule, then the default", () => {
    expect(checkSendPolicy(policy, { ...group, sessionId: "aaaa-1" }).ok).toBe(true);
    expect(checkSendPolicy(policy, { ...group, sessionId: "cccc-1" })).toEqual({ ok: false, error: "the send policy denies it (rule 2)" });
    expect(checkSendPolicy(policy, { channel: "milky", chatType: "private", sessionId: "bbbb-2", chatOverride: null })).toEqual({
      ok: false,
      error: "the send policy denies it (rule 3)",
    });
    expect(checkSendPolicy(policy, { channel: "milky", chatType: "private", chatOverride: null }).ok).toBe(true);
    expect(checkSendPolicy({ default: "deny", rules: [] }, { channel: "milky", chatType: "private", chatOverride: null })).toEqual({
      ok: false,
      error: "the send policy denies sends by default",
    });
  });

  it("lets the chat's /send override win over the rules", () => {
    expect(checkSendPolicy(policy, { ...group, chatOverride: "allow" }).ok).toBe(true);
    expect(checkSendPolicy({ default: "allow", rules: [] }, { ...group, chatOverride: "deny" })).toEqual({
      ok: false,
      error: "the target chat turned sends from other sessions off (/send off)",
    });
  });

  it("never matches a channel or chat type rule for a session without a chat", () => {
    expect(checkSendPolicy(policy, { channel: null, chatType: null, sessionId: "cccc-1", chatOverride: null }).ok).toBe(true);
    expect(checkSendPolicy(policy, { channel: null, chatType: null, sessionId: "bbbb-1", chatOverride: null }).ok).toBe(false);
  });

  it("refuses rules that could never match", () => {
    expect(SendPolicy.safeParse({ rules: [{ effect: "deny", channel: "Telegram" }] }).success).toBe(false);
    expect(SendPolicy.safeParse({ rules: [{ effect: "deny", session_prefix: "ABC" }] }).success).toBe(false);
    expect(SendPolicy.safeParse({ rules: [{ effect: "maybe" }] }).success).toBe(false);
  });
});

describe("parseMessageTarget", () => {
  it("reads typed addresses and session ids, in any case", () => {
    expect(parseMessageTarget("telegram:group:-100123")).toMatchObject({ ok: true, value: { kind: "chat", raw: "telegram:group:-100123" } });
    expect(parseMessageTarget("session:0F0E0D0C-0000-4000-8000-00000000000A")).toEqual({
      ok: true,
      value: { kind: "session", sessionId: "0f0e0d0c-0000-4000-8000-00000000000a" },
    });
  });

  it("refuses bare numbers, untyped keys and bad session ids with the accepted forms", () => {
    for (const bad of ["-100123", "telegram:123", "group:-100123", "session:42"]) {
      const parsed = parseMessageTarget(bad);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toMatch(/session:<session id>/);
    }
  });
});
