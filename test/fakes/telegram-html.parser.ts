/** Result of reading text sent with `parse_mode: "HTML"`: the visible text, or Telegram's reason for refusing it. */
export type TelegramHtmlResult = { ok: true; text: string } | { ok: false; error: string };

/** Tags the Bot API accepts in HTML parse mode; `span` only with class "tg-spoiler". */
const SUPPORTED_TAGS = new Set([
  "b", "strong", "i", "em", "u", "ins", "s", "strike", "del",
  "a", "code", "pre", "tg-spoiler", "span", "blockquote",
]);

const NAMED_ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };

/**
 * Checks HTML the way the Bot API does and returns the text the user would see.
 * Error strings follow tdlib's wording and report UTF-8 byte offsets, so a caller can
 * prefix them with "Bad Request: can't parse entities: " and match what Telegram answers.
 */
export function parseTelegramHtml(html: string): TelegramHtmlResult {
  const open: string[] = [];
  let text = "";
  let i = 0;
  while (i < html.length) {
    const ch = html[i] as string;
    if (ch === "&") {
      const entity = /^&(#x[0-9a-f]+|#\d+|[a-z]+);/i.exec(html.slice(i, i + 12));
      const decoded = entity ? decodeEntity(entity[1] as string) : undefined;
      // Telegram leaves an unrecognised "&..." in the text as written.
      if (entity && decoded !== undefined) {
        text += decoded;
        i += entity[0].length;
      } else {
        text += ch;
        i++;
      }
      continue;
    }
    if (ch !== "<") {
      text += ch;
      i++;
      continue;
    }

    const at = Buffer.byteLength(html.slice(0, i));
    if (html[i + 1] === "/") {
      if (open.length === 0) return { ok: false, error: `Unexpected end tag at byte offset ${at}` };
      const nameEnd = scanName(html, i + 2);
      let close = nameEnd;
      while (close < html.length && /\s/.test(html[close] as string)) close++;
      if (html[close] !== ">") return { ok: false, error: `Unclosed end tag at byte offset ${at}` };
      const name = html.slice(i + 2, nameEnd).toLowerCase();
      const expected = open.pop() as string;
      // tdlib lets a bare "</>" close whatever tag is open.
      if (name !== "" && name !== expected) {
        return { ok: false, error: `Unmatched end tag at byte offset ${at}, expected "</${expected}>", found "</${name}>"` };
      }
      i = close + 1;
      continue;
    }

    // Like tdlib, the tag name runs to the first space or ">", so "<br/>" names "br/" and "a < b" names "".
    const nameEnd = scanName(html, i + 1);
    if (nameEnd === html.length) return { ok: false, error: `Unclosed start tag at byte offset ${at}` };
    const name = html.slice(i + 1, nameEnd).toLowerCase();
    if (!SUPPORTED_TAGS.has(name)) return { ok: false, error: `Unsupported start tag "${name}" at byte offset ${at}` };
    const end = findTagEnd(html, nameEnd);
    if (end === -1) return { ok: false, error: `Unclosed start tag at byte offset ${at}` };
    if (name === "span" && !/\bclass\s*=\s*(["']?)tg-spoiler\1/i.test(html.slice(nameEnd, end))) {
      return { ok: false, error: `Tag "span" must have class "tg-spoiler" at byte offset ${at}` };
    }
    open.push(name);
    i = end + 1;
  }
  const unclosed = open.at(-1);
  if (unclosed !== undefined) {
    return { ok: false, error: `Can't find end tag corresponding to start tag "${unclosed}"` };
  }
  return { ok: true, text };
}

function scanName(html: string, from: number): number {
  let i = from;
  while (i < html.length && html[i] !== ">" && !/\s/.test(html[i] as string)) i++;
  return i;
}

/** Index of the `>` closing a tag, skipping any inside quoted attribute values; -1 if none. */
function findTagEnd(html: string, from: number): number {
  let quote: string | undefined;
  for (let i = from; i < html.length; i++) {
    const ch = html[i];
    if (quote) {
      if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
    } else if (ch === ">") {
      return i;
    } else if (ch === "<") {
      return -1;
    }
  }
  return -1;
}

function decodeEntity(body: string): string | undefined {
  if (body[0] === "#") {
    const code = body[1] === "x" || body[1] === "X" ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
    return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : undefined;
  }
  return NAMED_ENTITIES[body.toLowerCase()];
}
