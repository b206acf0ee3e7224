import type { MarkdownInline } from "./markdown-tree";

type StyleKind = "bold" | "italic" | "strike";
type DelimiterChar = "*" | "_" | "~";

interface Delimiter {
  kind: "delimiter";
  char: DelimiterChar;
  /** Characters of the run not yet used by a match; literal text in the tree. */
  count: number;
  originalCount: number;
  canOpen: boolean;
  canClose: boolean;
  cell: Cell;
  previous: Delimiter | null;
  next: Delimiter | null;
}

/** What the tokenizer links together; delimiters and styles become tree nodes in `toTree`. */
type Token =
  | Exclude<MarkdownInline, { kind: StyleKind }>
  | { kind: "style"; style: StyleKind; children: Token[] }
  | Delimiter;

interface Cell {
  token: Token;
  previous: Cell | null;
  next: Cell | null;
}

/** URL schemes a link may target; anything else stays literal text. */
const ALLOWED_HREF = /^(?:https?:\/\/|tg:\/\/|mailto:)/i;
const ASCII_PUNCTUATION = /^[!-/:-@[-`{-~]$/;
const WHITESPACE = /^\s$/u;
const ALPHANUMERIC = /^[\p{L}\p{N}]$/u;
const TITLE_CLOSERS = new Map([
  ['"', '"'],
  ["'", "'"],
  ["(", ")"],
]);
const MAX_LINK_TEXT = 2000;
const MAX_HREF = 2048;

const AUTOLINK = /<((?:https?:\/\/|tg:\/\/|mailto:)[^\s<>]*)>/iy;
const BARE_URL = /https?:\/\/[^\s<>`]+/iy;
const INLINE_SPECIAL = /[\\`![<*_~hH]/g;

/**
 * Parses the inline Markdown of one paragraph (or list item, heading, link text):
 * `**bold**`/`__bold__`, `*italic*`/`_italic_` (not inside snake_case words, not around a
 * lone `*`), `~~strike~~`, `` `code` ``, links, images, `<autolinks>` and bare URLs.
 * Emphasis is resolved as CommonMark does, so styles always nest. Total: any input parses.
 * @param inLink true for a link's text, where links are not recognized
 */
export function parseInline(source: string, inLink = false): MarkdownInline[] {
  const sentinel: Cell = { token: { kind: "text", text: "" }, previous: null, next: null };
  let tail = sentinel;
  let firstDelimiter: Delimiter | null = null;
  let lastDelimiter: Delimiter | null = null;

  const append = (token: Token): Cell => {
    const cell: Cell = { token, previous: tail, next: null };
    tail.next = cell;
    tail = cell;
    return cell;
  };
  const appendText = (text: string): void => {
    if (text === "") return;
    if (tail !== sentinel && tail.token.kind === "text") tail.token.text += text;
    else append({ kind: "text", text });
  };
  const appendDelimiter = (char: DelimiterChar, count: number, canOpen: boolean, canClose: boolean): void => {
    const delimiter: Delimiter = {
      kind: "delimiter",
      char,
      count,
      originalCount: count,
      canOpen,
      canClose,
      cell: sentinel,
      previous: lastDelimiter,
      next: null,
    };
    delimiter.cell = append(delimiter);
    if (lastDelimiter === null) firstDelimiter = delimiter;
    else lastDelimiter.next = delimiter;
    lastDelimiter = delimiter;
  };

  const findCodeCloser = backtickRunFinder(source);
  const findBracketCloser = bracketMatcher(source);
  let i = 0;
  while (i < source.length) {
    const char = source[i] ?? "";
    switch (char) {
      case "\\": {
        const next = source[i + 1];
        if (next !== undefined && ASCII_PUNCTUATION.test(next)) {
          appendText(next);
          i += 2;
        } else {
          appendText("\\");
          i += 1;
        }
        continue;
      }
      case "`": {
        const length = runLength(source, i, "`");
        const closer = findCodeCloser(length, i + length);
        if (closer === undefined) {
          appendText("`".repeat(length));
        } else {
          append({ kind: "code", code: codeSpanContent(source.slice(i + length, closer)) });
        }
        i = closer === undefined ? i + length : closer + length;
        continue;
      }
      case "!":
      case "[": {
        const bracket = char === "!" ? i + 1 : i;
        const link = !inLink && source[bracket] === "[" ? parseLink(source, bracket, findBracketCloser) : undefined;
        if (link === undefined) {
          appendText(char);
          i += 1;
        } else {
          const children = parseInline(source.slice(link.textStart, link.textEnd), true);
          append(char === "!" ? { kind: "image", src: link.href, alt: children } : { kind: "link", href: link.href, children });
          i = link.end;
        }
        continue;
      }
      case "<": {
        AUTOLINK.lastIndex = i;
        const match = inLink ? null : AUTOLINK.exec(source);
        const href = match?.[1];
        if (match === null || href === undefined) {
          appendText("<");
          i += 1;
        } else {
          append({ kind: "link", href, children: [{ kind: "text", text: href }] });
          i += match[0].length;
        }
        continue;
      }
      case "h":
      case "H": {
        const url = ALPHANUMERIC.test(charBefore(source, i) ?? "") ? undefined : bareUrlAt(source, i);
        // A token of its own, so `_` and `*` inside URLs are never markup.
        if (url === undefined) appendText(char);
        else append({ kind: "url", url });
        i += url?.length ?? 1;
        continue;
      }
      case "*":
      case "_":
      case "~": {
        const length = runLength(source, i, char);
        const before = charBefore(source, i);
        const after = charAt(source, i + length);
        const leftFlanking = after !== undefined && !WHITESPACE.test(after);
        const rightFlanking = before !== undefined && !WHITESPACE.test(before);
        let canOpen = leftFlanking;
        let canClose = rightFlanking;
        if (char === "_") {
          // Intraword underscores (snake_case, file_name_here) are never emphasis.
          canOpen &&= !ALPHANUMERIC.test(before ?? "");
          canClose &&= !ALPHANUMERIC.test(after ?? "");
        }
        // Only "~~" strikes: a lone "~" is how people write "about" (~5 min).
        if ((char === "~" && length !== 2) || (!canOpen && !canClose)) appendText(char.repeat(length));
        else appendDelimiter(char, length, canOpen, canClose);
        i += length;
        continue;
      }
      default: {
        INLINE_SPECIAL.lastIndex = i + 1;
        const end = INLINE_SPECIAL.exec(source)?.index ?? source.length;
        appendText(source.slice(i, end));
        i = end;
      }
    }
  }

  processEmphasis(firstDelimiter);
  const tokens: Token[] = [];
  for (let cell = sentinel.next; cell !== null; cell = cell.next) tokens.push(cell.token);
  return toTree(tokens);
}

/** Turns resolved tokens into tree nodes: styles into their kinds, unused delimiters into text, adjacent text merged. */
function toTree(tokens: Token[]): MarkdownInline[] {
  const nodes: MarkdownInline[] = [];
  const pushText = (text: string): void => {
    if (text === "") return;
    const last = nodes.at(-1);
    if (last?.kind === "text") last.text += text;
    else nodes.push({ kind: "text", text });
  };
  for (const token of tokens) {
    switch (token.kind) {
      case "text":
        pushText(token.text);
        break;
      case "delimiter":
        pushText(token.char.repeat(token.count));
        break;
      case "style":
        nodes.push({ kind: token.style, children: toTree(token.children) });
        break;
      default:
        nodes.push(token);
    }
  }
  return nodes;
}

/**
 * CommonMark's "process emphasis": each closer looks back for the nearest compatible
 * opener; the cells between them become one style token, and the delimiters between them
 * are dropped from the stack. Matches therefore always nest, never cross.
 */
function processEmphasis(first: Delimiter | null): void {
  const openersBottom = new Map<string, Delimiter | null>();
  const removeDelimiter = (delimiter: Delimiter): void => {
    if (delimiter.previous !== null) delimiter.previous.next = delimiter.next;
    if (delimiter.next !== null) delimiter.next.previous = delimiter.previous;
  };
  const removeCell = (cell: Cell): void => {
    if (cell.previous !== null) cell.previous.next = cell.next;
    if (cell.next !== null) cell.next.previous = cell.previous;
  };

  let closer = first;
  while (closer !== null) {
    if (!closer.canClose) {
      closer = closer.next;
      continue;
    }
    const bottomKey = `${closer.char}${closer.canOpen ? 1 : 0}${closer.originalCount % 3}`;
    const bottom = openersBottom.get(bottomKey) ?? null;
    let opener = closer.previous;
    while (opener !== null && opener !== bottom && !canMatch(opener, closer)) opener = opener.previous;

    if (opener === null || opener === bottom) {
      openersBottom.set(bottomKey, closer.previous);
      const next: Delimiter | null = closer.next;
      if (!closer.canOpen) removeDelimiter(closer);
      closer = next;
      continue;
    }

    const used = closer.char === "~" ? 2 : opener.count >= 2 && closer.count >= 2 ? 2 : 1;
    const style: StyleKind = closer.char === "~" ? "strike" : used === 2 ? "bold" : "italic";
    opener.count -= used;
    closer.count -= used;

    const children: Token[] = [];
    for (let cell = opener.cell.next; cell !== null && cell !== closer.cell; cell = cell.next) children.push(cell.token);
    const styled: Cell = { token: { kind: "style", style, children }, previous: opener.cell, next: closer.cell };
    opener.cell.next = styled;
    closer.cell.previous = styled;
    opener.next = closer;
    closer.previous = opener;

    if (opener.count === 0) {
      removeCell(opener.cell);
      removeDelimiter(opener);
    }
    if (closer.count === 0) {
      const next: Delimiter | null = closer.next;
      removeCell(closer.cell);
      removeDelimiter(closer);
      closer = next;
    }
  }
}

function canMatch(opener: Delimiter, closer: Delimiter): boolean {
  if (opener.char !== closer.char || !opener.canOpen) return false;
  if (opener.char === "~") return opener.count === 2 && closer.count === 2;
  // CommonMark's rule of three keeps "*foo**bar*" from pairing the wrong runs.
  const eitherIsBoth = opener.canClose || closer.canOpen;
  const sum = opener.originalCount + closer.originalCount;
  return !(eitherIsBoth && sum % 3 === 0 && !(opener.originalCount % 3 === 0 && closer.originalCount % 3 === 0));
}

interface ParsedLink {
  textStart: number;
  textEnd: number;
  href: string;
  end: number;
}

/** `[text](href "title")` starting at `open` (a `[`), when href uses an allowed scheme. */
function parseLink(source: string, open: number, closeOf: (open: number) => number | undefined): ParsedLink | undefined {
  const close = closeOf(open);
  if (close === undefined || close - open > MAX_LINK_TEXT) return undefined;
  if (source[close + 1] !== "(") return undefined;

  let i = skipSpaces(source, close + 2);
  let href: string;
  const angled = source[i] === "<";
  // Reject a disallowed scheme before scanning, so "[a](" repeated stays linear.
  if (!ALLOWED_HREF.test(source.slice(angled ? i + 1 : i, i + 12))) return undefined;
  if (angled) {
    const end = source.slice(0, i + MAX_HREF + 2).indexOf(">", i);
    if (end === -1) return undefined;
    href = source.slice(i + 1, end);
    if (/[\n<]/.test(href)) return undefined;
    i = end + 1;
  } else {
    const start = i;
    let parens = 0;
    for (; i < source.length && i - start <= MAX_HREF; i++) {
      const char = source[i] ?? "";
      if (char === "\\" && ASCII_PUNCTUATION.test(source[i + 1] ?? "")) i++;
      else if (isSpaceOrControl(char)) break;
      else if (char === "(") parens++;
      else if (char === ")") {
        if (parens === 0) break;
        parens--;
      }
    }
    href = source.slice(start, i).replace(/\\([!-/:-@[-`{-~])/g, "$1");
  }
  i = skipSpaces(source, i);
  const titleClose = TITLE_CLOSERS.get(source[i] ?? "");
  if (titleClose !== undefined) {
    const end = source.slice(0, i + 1 + MAX_LINK_TEXT).indexOf(titleClose, i + 1);
    if (end === -1) return undefined;
    i = skipSpaces(source, end + 1);
  }
  if (source[i] !== ")") return undefined;
  if (!ALLOWED_HREF.test(href) || /[\s\p{Cc}]/u.test(href)) return undefined;
  return { textStart: open + 1, textEnd: close, href, end: i + 1 };
}

/** Pairs every `[` with its `]` in one pass, honouring nesting and backslash escapes. */
function bracketMatcher(source: string): (open: number) => number | undefined {
  let closes: Map<number, number> | undefined;
  return (open) => {
    if (closes === undefined) {
      closes = new Map();
      const opens: number[] = [];
      for (let i = 0; i < source.length; i++) {
        const char = source[i];
        if (char === "\\") i++;
        else if (char === "[") opens.push(i);
        else if (char === "]") {
          const start = opens.pop();
          if (start !== undefined) closes.set(start, i);
        }
      }
    }
    return closes.get(open);
  };
}

function isSpaceOrControl(char: string): boolean {
  const code = char.charCodeAt(0);
  return code <= 0x20 || (code >= 0x7f && code <= 0x9f) || (code > 0x7f && /\s/u.test(char));
}

function skipSpaces(source: string, from: number): number {
  let i = from;
  let newlines = 0;
  while (i < source.length && /\s/.test(source[i] ?? "")) {
    if (source[i] === "\n" && ++newlines > 1) break;
    i++;
  }
  return i;
}

/** The URL starting at `start`, without trailing punctuation that belongs to the sentence. */
function bareUrlAt(source: string, start: number): string | undefined {
  BARE_URL.lastIndex = start;
  let url = BARE_URL.exec(source)?.[0];
  if (url === undefined) return undefined;
  for (;;) {
    const last = url.at(-1) ?? "";
    const unbalanced =
      (last === ")" && count(url, "(") < count(url, ")")) || (last === "]" && count(url, "[") < count(url, "]"));
    if (!".,;:!?*_~'\"".includes(last) && !unbalanced) break;
    url = url.slice(0, -1);
  }
  return /^https?:\/\/./i.test(url) ? url : undefined;
}

function count(text: string, char: string): number {
  return text.split(char).length - 1;
}

/** Finds, for a backtick run of a given length, the next run of exactly that length. */
function backtickRunFinder(source: string): (length: number, from: number) => number | undefined {
  let runs: Map<number, number[]> | undefined;
  const cursors = new Map<number, number>();
  return (length, from) => {
    if (runs === undefined) {
      runs = new Map();
      for (const match of source.matchAll(/`+/g)) {
        const starts = runs.get(match[0].length) ?? [];
        starts.push(match.index);
        runs.set(match[0].length, starts);
      }
    }
    const starts = runs.get(length) ?? [];
    // Callers ask with increasing `from`, so each cursor only moves forward.
    let cursor = cursors.get(length) ?? 0;
    while (cursor < starts.length && (starts[cursor] ?? 0) < from) cursor++;
    cursors.set(length, cursor);
    return starts[cursor];
  };
}

function codeSpanContent(raw: string): string {
  const content = raw.replace(/\n/g, " ");
  const padded = content.length >= 2 && content.startsWith(" ") && content.endsWith(" ") && content.trim() !== "";
  return padded ? content.slice(1, -1) : content;
}

function runLength(source: string, start: number, char: string): number {
  let end = start;
  while (source[end] === char) end++;
  return end - start;
}

function charBefore(source: string, index: number): string | undefined {
  if (index <= 0) return undefined;
  const low = source.charCodeAt(index - 1);
  const high = source.charCodeAt(index - 2);
  const pair = low >= 0xdc00 && low <= 0xdfff && high >= 0xd800 && high <= 0xdbff;
  return source.slice(pair ? index - 2 : index - 1, index);
}

function charAt(source: string, index: number): string | undefined {
  const codePoint = source.codePointAt(index);
  return codePoint === undefined ? undefined : String.fromCodePoint(codePoint);
}
