import { describe, expect, it } from "vitest";
import { expectWellCut } from "@nahida/text/testing";
import { chunkTelegramText as chunkText, TELEGRAM_TEXT_LIMIT } from "./chunk-text";

describe("chunkTelegramText", () => {
  it("defaults to Telegram's 4096 limit", () => {
    expect(TELEGRAM_TEXT_LIMIT).toBe(4096);
    expect(chunkText("a".repeat(4096))).toEqual(["a".repeat(4096)]);
  });

  it("gives a 5000-character answer as two chunks", () => {
    const words = Array.from({ length: 1000 }, (_, i) => `w${String(i % 1000).padStart(3, "0")}`).join(" ");
    expect(words).toHaveLength(4999);
    const chunks = chunkText(words);
    expect(chunks).toHaveLength(2);
    expectWellCut(words, chunks, 4096);
  });

  it("hard-cuts text without any break exactly at the limit", () => {
    expect(chunkText("a".repeat(5000)).map((chunk) => chunk.length)).toEqual([4096, 904]);
  });

  it("returns text that fits unchanged, surrounding whitespace included", () => {
    expect(chunkText("  hello\n\n")).toEqual(["  hello\n\n"]);
  });

  it.each(["", " ", "\n\n\t "])("returns no chunks for blank text %j", (text) => {
    expect(chunkText(text)).toEqual([]);
  });
});
