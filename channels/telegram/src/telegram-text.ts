import { isFenceClose, parseFenceOpen, type CodeFence } from "@nahida/text";
import { chunkTelegramText, TELEGRAM_TEXT_LIMIT } from "./chunk-text";
import { escapeHtml, markdownToTelegramHtml } from "./markdown-to-telegram-html";

export { chunkTelegramText as chunkText, TELEGRAM_TEXT_LIMIT } from "./chunk-text";
export { escapeHtml, markdownToTelegramHtml } from "./markdown-to-telegram-html";

/** One Telegram message worth of an answer. */
export interface TelegramChunk {
  /** Telegram HTML (`parse_mode: "HTML"`), well-formed, at most `limit` characters once parsed. */
  html: string;
  /**
   * The Markdown source this chunk was rendered from, at most `limit` UTF-16 code units:
   * what the sender sends without `parse_mode` when Telegram rejects the entities.
   */
  plain: string;
}

/**
 * Re-splitting gives up when the Markdown budget would fall to this share of the limit
 * (the piece renders several times longer than its source) and sends it as escaped plain text.
 */
const MIN_BUDGET_SHARE = 0.25;
/** A piece that still does not fit after this many re-splits is sent as escaped plain text. */
const MAX_RESPLIT_DEPTH = 4;

/**
 * Splits an LLM answer into Telegram messages. The Markdown source is chunked first (with
 * `chunkTelegramText`, so cuts fall on paragraph, line, then word boundaries) and each chunk is
 * rendered on its own, so every message is well-formed HTML whatever happens at the cut.
 * A code block cut in two is closed at the end of one chunk and reopened, with its
 * language, at the start of the next. Each chunk is measured after rendering: the text
 * Telegram shows (tags removed, entities decoded) and the plain fallback must both fit in
 * `limit`; a chunk that does not is re-split with a proportionally smaller budget, and as a
 * last resort sent as escaped plain text. Chunks that would show nothing are dropped.
 * @param limit Telegram's text limit in UTF-16 code units (default 4096)
 */
export function renderTelegramChunks(markdown: string, limit: number = TELEGRAM_TEXT_LIMIT): TelegramChunk[] {
  if (!Number.isInteger(limit) || limit < 2) throw new RangeError(`chunk limit must be an integer >= 2, got ${limit}`);
  const source = markdown.replace(/\r\n?/g, "\n");
  if (source.trim() === "") return [];
  return renderWithBudget(source, limit, limit, 0);
}

/**
 * The text Telegram shows for HTML produced by `markdownToTelegramHtml`: tags removed and
 * entities decoded. Its length is what Telegram checks against the 4096 limit.
 */
export function telegramHtmlToText(html: string): string {
  return html.replace(/<[^>]*>/g, "").replace(/&(amp|lt|gt|quot|#\d+|#x[0-9a-f]+);/gi, (entity, name: string) => {
    const lower = name.toLowerCase();
    if (lower === "amp") return "&";
    if (lower === "lt") return "<";
    if (lower === "gt") return ">";
    if (lower === "quot") return '"';
    const codePoint = lower.startsWith("#x") ? Number.parseInt(lower.slice(2), 16) : Number.parseInt(lower.slice(1), 10);
    return codePoint <= 0x10ffff ? String.fromCodePoint(codePoint) : entity;
  });
}

function renderWithBudget(markdown: string, limit: number, budget: number, depth: number): TelegramChunk[] {
  const chunks: TelegramChunk[] = [];
  // Reopening and closing a cut code block adds two fence lines to a chunk: leave room for them.
  const chunkBudget = Math.max(2, budget - fenceReserve(markdown, budget));
  for (const piece of balanceFences(chunkTelegramText(markdown, chunkBudget))) {
    const html = markdownToTelegramHtml(piece);
    const shown = telegramHtmlToText(html);
    if (shown.length <= limit && piece.length <= limit) {
      if (shown.trim() !== "") chunks.push({ html, plain: piece });
      continue;
    }
    const smaller = Math.min(piece.length - 1, Math.floor((piece.length * limit * 0.9) / Math.max(shown.length, piece.length)));
    const tooSmall = smaller <= Math.max(2, Math.floor(limit * MIN_BUDGET_SHARE));
    if (depth >= MAX_RESPLIT_DEPTH || tooSmall) chunks.push(...plainChunks(piece, limit));
    else chunks.push(...renderWithBudget(piece, limit, smaller, depth + 1));
  }
  return chunks;
}

function plainChunks(markdown: string, limit: number): TelegramChunk[] {
  return chunkTelegramText(markdown, limit).map((plain) => ({ html: escapeHtml(plain), plain }));
}

function fenceReserve(markdown: string, budget: number): number {
  let longest = -1;
  for (const line of markdown.split("\n")) if (parseFenceOpen(line) !== undefined) longest = Math.max(longest, line.length);
  return longest < 0 ? 0 : Math.min(Math.floor(budget / 4), 2 * (longest + 1));
}

/** Makes every chunk self-contained: a code block left open is closed, and reopened in the next chunk. */
function balanceFences(pieces: string[]): string[] {
  const balanced: string[] = [];
  let reopen: { line: string; fence: CodeFence } | undefined;
  for (const piece of pieces) {
    let text = piece;
    if (reopen !== undefined) {
      const firstLine = piece.split("\n", 1)[0] ?? "";
      // The cut fell just before the closing fence: drop it rather than send an empty block.
      text = isFenceClose(firstLine, reopen.fence) ? piece.slice(firstLine.length + 1) : `${reopen.line}\n${piece}`;
      reopen = undefined;
    }
    const open = openFenceAtEnd(text);
    if (open !== undefined) {
      reopen = { line: open.line, fence: open.fence };
      text = open.hasContent ? `${text}\n${open.fence.char.repeat(open.fence.length)}` : text.slice(0, open.lineStart).trimEnd();
    }
    if (text.trim() !== "") balanced.push(text);
  }
  return balanced;
}

interface OpenFence {
  fence: CodeFence;
  /** The opening line as written, to reopen the block in the next chunk. */
  line: string;
  lineStart: number;
  hasContent: boolean;
}

function openFenceAtEnd(markdown: string): OpenFence | undefined {
  let open: OpenFence | undefined;
  let offset = 0;
  for (const line of markdown.split("\n")) {
    if (open === undefined) {
      const fence = parseFenceOpen(line);
      if (fence !== undefined) open = { fence, line, lineStart: offset, hasContent: false };
    } else if (isFenceClose(line, open.fence)) {
      open = undefined;
    } else if (line.trim() !== "") {
      open.hasContent = true;
    }
    offset += line.length + 1;
  }
  return open;
}
