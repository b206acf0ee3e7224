import { describe, expect, it } from "vitest";
import { HISTORY_MESSAGE_MAX_CHARS, sanitizeHistoryText } from "./history-view";

describe("sanitizeHistoryText", () => {
  it("keeps ordinary text", () => {
    expect(sanitizeHistoryText("hello https://example.com/a?b=1")).toEqual({ text: "hello https://example.com/a?b=1", changed: false });
  });

  it("cuts to 2000 characters without splitting a surrogate pair", () => {
    const long = sanitizeHistoryText("a".repeat(1998) + "😀😀😀");
    expect(sanitizeHistoryText("x".repeat(300)).text).toBe("x".repeat(300));
    expect(long.text.length).toBeLessThanOrEqual(HISTORY_MESSAGE_MAX_CHARS);
    expect(long.text.endsWith("…")).toBe(true);
    expect(long.changed).toBe(true);
    expect(/[\ud800-\udbff]…$/.test(long.text)).toBe(false);
  });

  it("removes base64, temporary URLs and reasoning", () => {
    const input = [
      "<think>secret chain of thought</think>Answer:",
      "image data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB",
      `blob ${"QUJDa1".repeat(60)}`,
      "see https://bucket.s3.amazonaws.com/f.png?X-Amz-Signature=abc&X-Amz-Expires=300",
    ].join("\n");
    const { text, changed } = sanitizeHistoryText(input);
    expect(changed).toBe(true);
    expect(text).not.toContain("secret chain");
    expect(text).not.toContain("iVBORw0KGgo");
    expect(text).not.toContain("QUJDa1QUJD");
    expect(text).not.toContain("X-Amz-Signature");
    expect(text).toContain("[temporary URL removed]");
    expect(text).toContain("[base64 data removed]");
  });
});
