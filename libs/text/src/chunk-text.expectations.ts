import { expect } from "vitest";
import type { TextMeasure } from "./chunk-text";

/**
 * What every chunking must satisfy, for the tests of any channel that chunks its text:
 * import from "@nahida/text/testing".
 */

/** Chunks appear in order in the text, and only whitespace lies between consecutive ones. */
export function expectFaithful(text: string, chunks: string[]): void {
  let cursor = 0;
  for (const chunk of chunks) {
    const at = text.indexOf(chunk, cursor);
    expect(at, `chunk ${JSON.stringify(chunk.slice(0, 40))} not found in order`).toBeGreaterThanOrEqual(0);
    expect(text.slice(cursor, at)).toMatch(/^\s*$/);
    cursor = at + chunk.length;
  }
  expect(text.slice(cursor)).toMatch(/^\s*$/);
}

/** Faithful, and every chunk fits, is not blank and has no surrogate pair cut at either end. */
export function expectWellCut(text: string, chunks: string[], limit: number, measure: TextMeasure = (chunk) => chunk.length): void {
  expectFaithful(text, chunks);
  for (const chunk of chunks) {
    expect(measure(chunk)).toBeLessThanOrEqual(limit);
    expect(chunk.trim()).not.toBe("");
    expect(/[\ud800-\udbff]$/.test(chunk), "ends inside a surrogate pair").toBe(false);
    expect(/^[\udc00-\udfff]/.test(chunk), "starts inside a surrogate pair").toBe(false);
  }
}
