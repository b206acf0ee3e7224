import { describe, expect, it } from "vitest";
import { chunkText } from "./chunk-text";
import { expectFaithful, expectWellCut } from "./chunk-text.expectations";

const graphemes = new Intl.Segmenter("en", { granularity: "grapheme" });

/** The grapheme boundaries of the whole text, as offsets. */
function boundaries(text: string): Set<number> {
  const set = new Set<number>([text.length]);
  for (const { index } of graphemes.segment(text)) set.add(index);
  return set;
}

describe("chunkText", () => {
  it.each([0, 1, -5, 2.5, Number.NaN])("rejects the limit %s", (limit) => {
    expect(() => chunkText("abc", limit)).toThrow(RangeError);
  });

  describe("where it cuts", () => {
    it("prefers a paragraph break over later line breaks and spaces", () => {
      const text = `${"a".repeat(60)}\n\n${"b ".repeat(10)}\n${"c".repeat(30)}`;
      expect(chunkText(text, 100)).toEqual(["a".repeat(60), `${"b ".repeat(10)}\n${"c".repeat(30)}`]);
    });

    it("prefers a line break over spaces", () => {
      const text = `${"a ".repeat(30)}\n${"b ".repeat(30)}`;
      const chunks = chunkText(text, 100);
      expect(chunks[0]).toBe("a ".repeat(30).trimEnd());
      expectWellCut(text, chunks, 100);
    });

    it("falls back to the last space", () => {
      const text = "alpha beta gamma delta epsilon";
      expect(chunkText(text, 12)).toEqual(["alpha beta", "gamma delta", "epsilon"]);
    });

    it("does not cut at an early paragraph break when a later line break keeps the chunk at least half full", () => {
      const text = `intro\n\n${"x".repeat(70)}\n${"y".repeat(50)}`;
      const chunks = chunkText(text, 100);
      expect(chunks[0]).toBe(`intro\n\n${"x".repeat(70)}`);
    });

    it("takes an early break rather than cutting a word when nothing later fits", () => {
      const text = `intro\n\n${"x".repeat(150)}`;
      const chunks = chunkText(text, 100);
      expect(chunks[0]).toBe("intro");
      expectWellCut(text, chunks, 100);
    });

    it("can cut exactly at the limit when the separator starts there", () => {
      const text = `${"a".repeat(100)}\n${"b".repeat(10)}`;
      expect(chunkText(text, 100)).toEqual(["a".repeat(100), "b".repeat(10)]);
    });

    it("keeps the indentation of the line after a cut", () => {
      const text = `${"a".repeat(80)}\n    indented code\n  more`;
      expect(chunkText(text, 90)).toEqual(["a".repeat(80), "    indented code\n  more"]);
    });

    it("handles CRLF line endings", () => {
      const text = `${"a".repeat(50)}\r\n\r\n${"b".repeat(60)}`;
      expect(chunkText(text, 100)).toEqual(["a".repeat(50), "b".repeat(60)]);
    });

    it("never breaks at a no-break space", () => {
      const text = `${"a".repeat(20)} ${"b".repeat(20)}\u00a0${"c".repeat(20)}`;
      expect(chunkText(text, 50)).toEqual(["a".repeat(20), `${"b".repeat(20)}\u00a0${"c".repeat(20)}`]);
    });

    it("drops chunks that would only hold whitespace", () => {
      const text = `${" ".repeat(30)}\n\n${"a".repeat(30)}`;
      expect(chunkText(text, 20)).toEqual(["a".repeat(20), "a".repeat(10)]);
    });

    it("skips a long run of whitespace at a cut", () => {
      const text = `${"a".repeat(10)}${" ".repeat(500)}${"b".repeat(10)}`;
      expect(chunkText(text, 100)).toEqual(["a".repeat(10), "b".repeat(10)]);
    });
  });

  describe("never splits a character", () => {
    it.each([97, 99, 101, 4095])("keeps surrogate pairs whole with the odd limit %i", (limit) => {
      const text = "😀".repeat(3000);
      const chunks = chunkText(text, limit);
      expectWellCut(text, chunks, limit);
      expect(chunks.join("")).toBe(text);
    });

    it("keeps ZWJ emoji sequences whole", () => {
      const family = "👨‍👩‍👧‍👦";
      expect(family).toHaveLength(11);
      const text = family.repeat(50);
      const chunks = chunkText(text, 100);
      expect(chunks.join("")).toBe(text);
      for (const chunk of chunks) {
        expect(chunk.length % 11).toBe(0);
        expect(chunk.length).toBeLessThanOrEqual(100);
      }
    });

    it.each([
      ["flags", "🇨🇳🇯🇵🇩🇪"],
      ["combining accents", "e\u0301a\u0308o\u0302"],
      ["skin tones", "👍🏽👋🏿"],
      ["keycaps", "1️⃣2️⃣"],
      ["Hangul jamo", "\u1100\u1161\u11a8"],
      ["Devanagari", "क्षत्रिय"],
    ])("cuts %s only at grapheme boundaries", (_name, unit) => {
      const text = unit.repeat(200);
      const cuts = boundaries(text);
      for (const limit of [7, 10, 13, 50]) {
        const chunks = chunkText(text, limit);
        expect(chunks.join("")).toBe(text);
        let offset = 0;
        for (const chunk of chunks) {
          expect(chunk.length).toBeLessThanOrEqual(limit);
          offset += chunk.length;
          expect(cuts.has(offset), `cut at ${offset} is inside a grapheme`).toBe(true);
        }
      }
    });

    it("keeps a space and the combining mark after it together", () => {
      const text = `${"a".repeat(8)} \u0301${"b".repeat(8)} c`;
      const chunks = chunkText(text, 19);
      expectFaithful(text, chunks);
      expect(chunks[0]).toBe(`${"a".repeat(8)} \u0301${"b".repeat(8)}`);
    });

    it("splits a grapheme longer than the limit at code points, and only then", () => {
      const zalgo = `a${"\u0301".repeat(30)}`;
      const chunks = chunkText(zalgo, 10);
      expect(chunks.join("")).toBe(zalgo);
      for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(10);
    });

    it("keeps a surrogate pair whole even inside an oversized grapheme", () => {
      const cluster = `😀${"\u0301".repeat(20)}`;
      const chunks = chunkText(`${cluster}${cluster}`, 2);
      expect(chunks.join("")).toBe(`${cluster}${cluster}`);
      expect(chunks[0]).toBe("😀");
    });
  });

  it("is faithful on mixed text across many limits", () => {
    const paragraph = "Nahida 纳西妲 says: the **quick** brown 🦊 jumps over the lazy 🐶.\nSecond line with `code`.";
    const text = Array.from({ length: 40 }, (_, i) => `${i}. ${paragraph}`).join("\n\n");
    for (const limit of [2, 3, 17, 64, 100, 333, 1000]) expectWellCut(text, chunkText(text, limit), limit);
  });

  describe("with a measure of its own", () => {
    const utf8Bytes = (text: string): number => Buffer.byteLength(text, "utf8");
    const graphemeCount = (text: string): number => [...graphemes.segment(text)].length;

    it("returns text that fits unchanged and blank text as nothing", () => {
      expect(chunkText("  纳西妲\n", 12, { measure: utf8Bytes })).toEqual(["  纳西妲\n"]);
      expect(chunkText(" \n ", 2, { measure: utf8Bytes })).toEqual([]);
    });

    it("cuts UTF-8 text at spaces under a byte limit", () => {
      const text = "纳西妲 ".repeat(100).trim();
      const chunks = chunkText(text, 40, { measure: utf8Bytes });
      expectWellCut(text, chunks, 40, utf8Bytes);
      expect(chunks[0]).toBe("纳西妲 纳西妲 纳西妲 纳西妲");
    });

    it("hard-cuts at grapheme boundaries under a byte limit", () => {
      const text = "é😀👨‍👩‍👧".repeat(40);
      const cuts = boundaries(text);
      const chunks = chunkText(text, 30, { measure: utf8Bytes });
      expectWellCut(text, chunks, 30, utf8Bytes);
      expect(chunks.join("")).toBe(text);
      let offset = 0;
      for (const chunk of chunks) {
        offset += chunk.length;
        expect(cuts.has(offset), `cut at ${offset} is inside a grapheme`).toBe(true);
      }
    });

    it("fills chunks past `limit` code units when the measure counts less", () => {
      const text = "👍🏽".repeat(30);
      const chunks = chunkText(text, 10, { measure: graphemeCount });
      expect(chunks).toEqual(["👍🏽".repeat(10), "👍🏽".repeat(10), "👍🏽".repeat(10)]);
    });

    it("gives a code point that alone exceeds the limit a chunk of its own", () => {
      expect(chunkText("😀😀a", 3, { measure: utf8Bytes })).toEqual(["😀", "😀", "a"]);
    });
  });
});
