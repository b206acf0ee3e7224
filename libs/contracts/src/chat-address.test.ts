import { describe, expect, it } from "vitest";
import { CHAT_ADDRESS_FORM, formatChatAddress, parseChatAddress } from "./chat-address";

describe("parseChatAddress", () => {
  it.each([
    "telegram:private:12345",
    "milky:group:20001",
    "telegram:group:-1001234567890:42",
    "telegram:channel:-100777",
    "web_chat:private:u-1:t_1",
    "x-1:group:abc",
  ])("round-trips %s", (input) => {
    const parsed = parseChatAddress(input);
    expect(parsed.ok).toBe(true);
    if (parsed.ok) expect(formatChatAddress(parsed.value)).toBe(input);
  });

  it("splits the parts", () => {
    expect(parseChatAddress("telegram:group:-1001234567890:42")).toEqual({
      ok: true,
      value: { channel: "telegram", type: "group", id: "-1001234567890", thread: "42" },
    });
  });

  it.each([
    ["milky:10001", "two-part legacy"],
    ["12345", "too few parts"],
    ["", "too few parts"],
    ["telegram:user:1", "unknown chat type"],
    ["telegram:Private:1", "unknown chat type"],
    ["telegram::1", "empty part"],
    ["telegram:private:", "empty part"],
    ["telegram:group:1:", "empty part"],
    [":private:1", "empty part"],
    ["telegram:group:1:2:3", "too many parts"],
    ["Telegram:private:1", "must match"],
    ["1telegram:private:1", "must match"],
    ["telegram:private:1 2", "whitespace"],
    [`telegram:private:${"9".repeat(300)}`, "longer than 256"],
  ])("rejects %j (%s) and names the expected form", (input, reason) => {
    const parsed = parseChatAddress(input);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.error.code).toBe("invalid_address");
      expect(parsed.error.message).toContain(reason);
      expect(parsed.error.message).toContain(CHAT_ADDRESS_FORM);
    }
  });
});
