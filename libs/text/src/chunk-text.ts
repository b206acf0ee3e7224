/** Blank line: the chunk ends before it, the next starts after it. */
const PARAGRAPH_BREAK = /\n[^\S\n]*\n/g;
const LINE_BREAK = /\n/g;
/** Breakable spaces: whitespace except line breaks and the no-break spaces. */
const SPACE_RUN = /[^\S\n\u00a0\u2007\u202f]+/g;
const SEPARATOR_KINDS = [PARAGRAPH_BREAK, LINE_BREAK, SPACE_RUN] as const;
/** A character that joins the previous one into a grapheme cluster. */
const GRAPHEME_EXTENDER = /^[\p{M}\u200d]/u;
/** What a cut at a separator drops from the start of the next chunk: the break, not the next line's indentation. */
const LEADING_SEPARATOR = /^(?:\s*\n|[^\S\n]+)/;
/** Grapheme rules look at most one code point past a boundary; this much look-ahead is plenty. */
const GRAPHEME_LOOKAHEAD = 32;

const graphemes = new Intl.Segmenter("en", { granularity: "grapheme" });

/** The length of a text in the unit a channel limits, e.g. UTF-16 code units or UTF-8 bytes. */
export type TextMeasure = (text: string) => number;

export interface ChunkTextOptions {
  /**
   * How `limit` is measured (default: UTF-16 code units, `text.length`). It must not
   * shrink when text is appended, as every length in code units or bytes does.
   */
  measure?: TextMeasure;
}

const utf16Length: TextMeasure = (text) => text.length;

/**
 * Splits `text` into chunks of at most `limit` (measured by `options.measure`), cutting at
 * the last paragraph break, else line break, else space that leaves the chunk at least half
 * full; failing that at any such break; failing that at the last grapheme boundary.
 * A surrogate pair is never split; a grapheme cluster only when it alone exceeds `limit`
 * (and a code point only ever stands alone in a chunk when it alone exceeds `limit`).
 * The whitespace at each cut is dropped (the next line keeps its indentation), so joining
 * the chunks gives back the text modulo whitespace at the cut points. Text that fits comes
 * back as one unchanged chunk; empty or whitespace-only text gives no chunks; no chunk is
 * blank.
 * @param limit maximum chunk length, an integer ≥ 2
 */
export function chunkText(text: string, limit: number, options: ChunkTextOptions = {}): string[] {
  if (!Number.isInteger(limit) || limit < 2) throw new RangeError(`chunk limit must be an integer >= 2, got ${limit}`);
  const measure = options.measure ?? utf16Length;
  if (text.trim() === "") return [];
  const chunks: string[] = [];
  let rest = text;
  while (measure(rest) > limit) {
    const fit = longestFittingPrefix(rest, limit, measure);
    const cut = findSeparatorCut(rest, fit);
    if (cut !== undefined) {
      pushNonBlank(chunks, rest.slice(0, cut).trimEnd());
      rest = rest.slice(cut).replace(LEADING_SEPARATOR, "");
    } else {
      const end = hardCut(rest, fit);
      pushNonBlank(chunks, rest.slice(0, end));
      rest = rest.slice(end);
    }
  }
  pushNonBlank(chunks, rest);
  return chunks;
}

/**
 * The most code units of `text` (which does not fit) that fit in `limit`, at least one code
 * point so that every step makes progress. The first guess is `limit` itself: the answer
 * for code units, and an upper bound for any measure counting at least one per code unit.
 */
function longestFittingPrefix(text: string, limit: number, measure: TextMeasure): number {
  let fits = 0;
  let overflows = text.length;
  const guess = Math.min(limit, overflows - 1);
  if (measure(text.slice(0, guess)) > limit) {
    overflows = guess;
  } else {
    fits = guess;
    if (measure(text.slice(0, guess + 1)) > limit) overflows = guess + 1;
  }
  while (overflows - fits > 1) {
    const middle = Math.floor((fits + overflows) / 2);
    if (measure(text.slice(0, middle)) <= limit) fits = middle;
    else overflows = middle;
  }
  return Math.max(fits, isHighSurrogate(text.charCodeAt(0)) && isLowSurrogate(text.charCodeAt(1)) ? 2 : 1);
}

function pushNonBlank(chunks: string[], chunk: string): void {
  if (chunk.trim() !== "") chunks.push(chunk);
}

/** Where the chunk of at most `fit` code units ends (the separator starts), or undefined when nothing fits. */
function findSeparatorCut(text: string, fit: number): number | undefined {
  // The separator may start right at the limit: the chunk is then exactly `fit` long.
  const window = text.slice(0, fit + 1);
  for (const minimum of [Math.floor(fit / 2), 1]) {
    for (const kind of SEPARATOR_KINDS) {
      const cut = lastSeparator(kind, window, text, minimum);
      if (cut !== undefined) return cut;
    }
  }
  return undefined;
}

function lastSeparator(kind: RegExp, window: string, text: string, minimum: number): number | undefined {
  let found: number | undefined;
  for (const match of window.matchAll(kind)) {
    if (match.index < minimum) continue;
    // A space followed by a combining mark is one grapheme: leave it whole.
    if (kind === SPACE_RUN && GRAPHEME_EXTENDER.test(text.slice(match.index + match[0].length))) continue;
    found = match.index;
  }
  return found;
}

/** The last grapheme boundary within `fit` code units; a code point boundary if one grapheme is longer. */
function hardCut(text: string, fit: number): number {
  // containing() asks ICU for the one boundary; iterating segments is O(n) per step in V8.
  const start = graphemes.segment(text.slice(0, fit + GRAPHEME_LOOKAHEAD)).containing(fit)?.index ?? 0;
  if (start > 0) return start;
  const splitsPair = isHighSurrogate(text.charCodeAt(fit - 1)) && isLowSurrogate(text.charCodeAt(fit));
  return splitsPair && fit > 1 ? fit - 1 : fit;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
