/**
 * Markdown as LLMs write it → Telegram's HTML subset.
 *
 * Output is well-formed by construction: every tag is emitted by the renderer together with
 * its closing tag around an already-rendered subtree, and every piece of source text goes
 * through `escapeHtml`. Source HTML is never passed through. Nesting follows Telegram's
 * rules: nothing inside `code`/`pre`, no link inside a link, no code inside a link, no
 * blockquote or `pre` inside a blockquote, and no style inside the same style.
 */

type StyleTag = "b" | "i" | "s";
type DelimiterChar = "*" | "_" | "~";

interface Delimiter {
  kind: "delimiter";
  char: DelimiterChar;
  /** Characters of the run not yet used by a match; rendered literally. */
  count: number;
  originalCount: number;
  canOpen: boolean;
  canClose: boolean;
  cell: Cell;
  previous: Delimiter | null;
  next: Delimiter | null;
}

type InlineNode =
  | { kind: "text"; text: string }
  | { kind: "code"; text: string }
  | { kind: "link"; href: string; children: InlineNode[] }
  | { kind: "style"; tag: StyleTag; children: InlineNode[] }
  | Delimiter;

interface Cell {
  node: InlineNode;
  previous: Cell | null;
  next: Cell | null;
}

/** An opening code fence: "```python" is `{ char: "`", length: 3, indent: 0, language: "python" }`. */
export interface CodeFence {
  char: "`" | "~";
  length: number;
  /** Leading spaces of the fence line, stripped from the code lines too. */
  indent: number;
  /** The info string's first word when it is a plausible language name. */
  language: string | undefined;
}

interface RenderContext {
  active: ReadonlySet<StyleTag>;
  inLink: boolean;
}

/** URL schemes Telegram accepts in `<a href>`; anything else stays literal text. */
const ALLOWED_HREF = /^(?:https?:\/\/|tg:\/\/|mailto:)/i;
const ASCII_PUNCTUATION = /^[!-/:-@[-`{-~]$/;
const WHITESPACE = /^\s$/u;
const ALPHANUMERIC = /^[\p{L}\p{N}]$/u;
const LANGUAGE = /^[\w#+.-]{1,40}$/;
const TITLE_CLOSERS = new Map([
  ['"', '"'],
  ["'", "'"],
  ["(", ")"],
]);
const MAX_LINK_TEXT = 2000;
const MAX_HREF = 2048;

const FENCE_OPEN = /^([ \t]*)(`{3,}|~{3,})(.*)$/;
const FENCE_CLOSE = /^[ \t]*(`{3,}|~{3,})[ \t]*$/;
const QUOTE_PREFIX = /^(?:[ \t]{0,3}>[ \t]?)+/;
const HEADING = /^ {0,3}#{1,6}(?:[ \t]+(.*))?$/;
const THEMATIC_BREAK = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const BULLET_ITEM = /^([ \t]*)[-*+][ \t]+(.*)$/;
const ORDERED_ITEM = /^([ \t]*)(\d{1,9})([.)])[ \t]+(.*)$/;
const TASK_BOX = /^\[([ xX])\][ \t]+/;
const AUTOLINK = /<((?:https?:\/\/|tg:\/\/|mailto:)[^\s<>]*)>/iy;
const BARE_URL = /https?:\/\/[^\s<>`]+/iy;
const INLINE_SPECIAL = /[\\`![<*_~hH]/g;

const HORIZONTAL_RULE = "──────────";

/** Escapes `&`, `<` and `>` for Telegram HTML text. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>]/g, (char) => (char === "&" ? "&amp;" : char === "<" ? "&lt;" : "&gt;"));
}

function escapeAttribute(text: string): string {
  return escapeHtml(text).replace(/"/g, "&quot;");
}

/**
 * Renders Markdown into Telegram HTML (`parse_mode: "HTML"`): `**bold**`/`__bold__`,
 * `*italic*`/`_italic_` (not inside snake_case words, not around lone `*`), `~~strike~~`,
 * `` `code` ``, fenced code blocks with a language, `[links](url)` for http/https/tg/mailto
 * only, `# headings` as bold lines, `-`/`*`/`+` bullets as `• `, numbered lists unchanged,
 * `>` blockquotes, `---` as a horizontal rule. Unmatched markers stay literal text; an
 * unclosed code fence runs to the end of the text, as in CommonMark. Line breaks are kept.
 */
export function markdownToTelegramHtml(markdown: string): string {
  const lines = markdown.replace(/\r\n?/g, "\n").split("\n");
  return trimBlankLines(renderBlocks(lines, false)).join("\n");
}

/** Recognizes an opening code fence line the way the renderer does. */
export function parseFenceOpen(line: string): CodeFence | undefined {
  const match = FENCE_OPEN.exec(line);
  if (match === null) return undefined;
  const [, indent = "", marker = "", info = ""] = match;
  const char = marker[0] === "`" ? "`" : "~";
  // A backtick fence's info string cannot contain backticks: "```js```" is inline code.
  if (char === "`" && info.includes("`")) return undefined;
  const language = info.trim().split(/\s+/)[0] ?? "";
  return { char, length: marker.length, indent: indent.length, language: LANGUAGE.test(language) ? language : undefined };
}

/** True when `line` closes `fence`: the same character, at least as many, nothing else. */
export function isFenceClose(line: string, fence: CodeFence): boolean {
  const marker = FENCE_CLOSE.exec(line)?.[1];
  return marker !== undefined && marker[0] === fence.char && marker.length >= fence.length;
}

function renderBlocks(lines: string[], inQuote: boolean): string[] {
  const out: string[] = [];
  let paragraph: string[] = [];
  const flushParagraph = (): void => {
    if (paragraph.length > 0) out.push(renderInline(paragraph.join("\n")));
    paragraph = [];
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const fence = parseFenceOpen(line);
    if (fence !== undefined) {
      flushParagraph();
      const code: string[] = [];
      const indent = new RegExp(`^[ \\t]{0,${fence.indent}}`);
      for (i++; i < lines.length && !isFenceClose(lines[i] ?? "", fence); i++) code.push((lines[i] ?? "").replace(indent, ""));
      out.push(renderCodeBlock(code.join("\n"), fence.language, inQuote));
      continue;
    }
    if (line.trim() === "") {
      flushParagraph();
      out.push("");
      continue;
    }
    if (QUOTE_PREFIX.test(line)) {
      flushParagraph();
      if (inQuote) {
        paragraph.push(line.replace(QUOTE_PREFIX, ""));
        continue;
      }
      const quoted: string[] = [];
      for (; i < lines.length && QUOTE_PREFIX.test(lines[i] ?? ""); i++) quoted.push((lines[i] ?? "").replace(QUOTE_PREFIX, ""));
      i--;
      const inner = trimBlankLines(renderBlocks(quoted, true)).join("\n");
      out.push(inner === "" ? "" : `<blockquote>${inner}</blockquote>`);
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading !== null) {
      flushParagraph();
      const title = (heading[1] ?? "").replace(/(?:^|[ \t]+)#+[ \t]*$/, "").trim();
      const rendered = renderInline(title, new Set(["b"]));
      out.push(rendered === "" ? "" : `<b>${rendered}</b>`);
      continue;
    }
    if (THEMATIC_BREAK.test(line)) {
      flushParagraph();
      out.push(HORIZONTAL_RULE);
      continue;
    }
    const bullet = BULLET_ITEM.exec(line);
    if (bullet !== null) {
      flushParagraph();
      const [, indent = "", content = ""] = bullet;
      const task = TASK_BOX.exec(content);
      const box = task === null ? "" : task[1] === " " ? "☐ " : "☑ ";
      out.push(`${escapeHtml(indent)}• ${box}${renderInline(task === null ? content : content.slice(task[0].length))}`);
      continue;
    }
    const ordered = ORDERED_ITEM.exec(line);
    if (ordered !== null) {
      flushParagraph();
      const [, indent = "", number = "", delimiter = "", content = ""] = ordered;
      out.push(`${escapeHtml(indent)}${number}${delimiter} ${renderInline(content)}`);
      continue;
    }
    paragraph.push(line.trimEnd());
  }
  flushParagraph();
  return out;
}

function renderCodeBlock(code: string, language: string | undefined, inQuote: boolean): string {
  if (code.trim() === "") return "";
  // Telegram allows no pre inside a blockquote: quoted code is kept as plain text.
  if (inQuote) return escapeHtml(code);
  if (language === undefined) return `<pre>${escapeHtml(code)}</pre>`;
  return `<pre><code class="language-${escapeAttribute(language)}">${escapeHtml(code)}</code></pre>`;
}

function trimBlankLines(lines: string[]): string[] {
  let start = 0;
  let end = lines.length;
  while (start < end && (lines[start] ?? "").trim() === "") start++;
  while (end > start && (lines[end - 1] ?? "").trim() === "") end--;
  return lines.slice(start, end);
}

function renderInline(source: string, active: ReadonlySet<StyleTag> = new Set()): string {
  return renderNodes(parseInline(source, false), { active, inLink: false });
}

function renderNodes(nodes: InlineNode[], context: RenderContext): string {
  let html = "";
  for (const node of nodes) {
    switch (node.kind) {
      case "text":
        html += escapeHtml(node.text);
        break;
      case "code":
        html += context.inLink || node.text.trim() === "" ? escapeHtml(node.text) : `<code>${escapeHtml(node.text)}</code>`;
        break;
      case "link": {
        const inner = renderNodes(node.children, { ...context, inLink: true });
        html += `<a href="${escapeAttribute(node.href)}">${inner === "" ? escapeHtml(node.href) : inner}</a>`;
        break;
      }
      case "style": {
        if (context.active.has(node.tag)) {
          html += renderNodes(node.children, context);
          break;
        }
        const inner = renderNodes(node.children, { ...context, active: new Set([...context.active, node.tag]) });
        html += inner === "" ? "" : `<${node.tag}>${inner}</${node.tag}>`;
        break;
      }
      case "delimiter":
        html += node.char.repeat(node.count);
        break;
      default: {
        const unreachable: never = node;
        throw new Error(`unknown inline node ${JSON.stringify(unreachable)}`);
      }
    }
  }
  return html;
}

/** Tokenizes one paragraph (or list item, heading, link text) and resolves emphasis. */
function parseInline(source: string, inLink: boolean): InlineNode[] {
  const sentinel: Cell = { node: { kind: "text", text: "" }, previous: null, next: null };
  let tail = sentinel;
  let firstDelimiter: Delimiter | null = null;
  let lastDelimiter: Delimiter | null = null;

  const append = (node: InlineNode): Cell => {
    const cell: Cell = { node, previous: tail, next: null };
    tail.next = cell;
    tail = cell;
    return cell;
  };
  const appendText = (text: string): void => {
    if (text === "") return;
    if (tail !== sentinel && tail.node.kind === "text") tail.node.text += text;
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
          append({ kind: "code", text: codeSpanContent(source.slice(i + length, closer)) });
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
          append({ kind: "link", href: link.href, children });
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
        // Kept as plain text (Telegram links it itself), so `_` and `*` inside URLs are never markup.
        appendText(url ?? char);
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
  const nodes: InlineNode[] = [];
  for (let cell = sentinel.next; cell !== null; cell = cell.next) nodes.push(cell.node);
  return nodes;
}

/**
 * CommonMark's "process emphasis": each closer looks back for the nearest compatible
 * opener; the cells between them become one style node, and the delimiters between them
 * are dropped from the stack. Matches therefore always nest, which keeps the HTML balanced.
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
    const tag: StyleTag = closer.char === "~" ? "s" : used === 2 ? "b" : "i";
    opener.count -= used;
    closer.count -= used;

    const children: InlineNode[] = [];
    for (let cell = opener.cell.next; cell !== null && cell !== closer.cell; cell = cell.next) children.push(cell.node);
    const styled: Cell = { node: { kind: "style", tag, children }, previous: opener.cell, next: closer.cell };
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
