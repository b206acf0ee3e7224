/** Telegram's limit on a message's text, in UTF-16 code units after entity parsing. */
export const TELEGRAM_TEXT_LIMIT = 4096;

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

/**
 * Splits `text` into chunks of at most `limit` UTF-16 code units (Telegram's unit), cutting
 * at the last paragraph break, else line break, else space that leaves the chunk at least
 * half full; failing that at any such break; failing that at the last grapheme boundary.
 * A surrogate pair is never split; a grapheme cluster only when it alone exceeds `limit`.
 * The whitespace at each cut is dropped (the next line keeps its indentation), so joining
 * the chunks gives back the text modulo whitespace at the cut points. Text that fits comes
 * back as one unchanged chunk; empty or whitespace-only text gives no chunks; no chunk is
 * blank.
 * @param limit maximum chunk length in UTF-16 code units, an integer ≥ 2 (default 4096)
 */
export function chunkText(text: string, limit: number = TELEGRAM_TEXT_LIMIT): string[] {
  if (!Number.isInteger(limit) || limit < 2) throw new RangeError(`chunk limit must be an integer >= 2, got ${limit}`);
  if (text.trim() === "") return [];
  const chunks: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    const cut = findSeparatorCut(rest, limit);
    if (cut !== undefined) {
      pushNonBlank(chunks, rest.slice(0, cut).trimEnd());
      rest = rest.slice(cut).replace(LEADING_SEPARATOR, "");
    } else {
      const end = hardCut(rest, limit);
      pushNonBlank(chunks, rest.slice(0, end));
      rest = rest.slice(end);
    }
  }
  pushNonBlank(chunks, rest);
  return chunks;
}

function pushNonBlank(chunks: string[], chunk: string): void {
  if (chunk.trim() !== "") chunks.push(chunk);
}

/** Where the chunk ends (the separator starts), or undefined when nothing fits. */
function findSeparatorCut(text: string, limit: number): number | undefined {
  // The separator may start right at the limit: the chunk is then exactly `limit` long.
  const window = text.slice(0, limit + 1);
  for (const minimum of [Math.floor(limit / 2), 1]) {
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

/** The last grapheme boundary within the limit; a code point boundary if one grapheme is longer than the limit. */
function hardCut(text: string, limit: number): number {
  // containing() asks ICU for the one boundary; iterating segments is O(n) per step in V8.
  const start = graphemes.segment(text.slice(0, limit + GRAPHEME_LOOKAHEAD)).containing(limit)?.index ?? 0;
  if (start > 0) return start;
  const splitsPair = isHighSurrogate(text.charCodeAt(limit - 1)) && isLowSurrogate(text.charCodeAt(limit));
  return splitsPair ? limit - 1 : limit;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
