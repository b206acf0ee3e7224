import { chunkText, parseMarkdown, renderPlainText } from "@nahida/text";

/**
 * What the sender puts in one QQ message, in UTF-16 code units. QQ folds or refuses very
 * long messages; 3000 keeps each part readable on a phone and well inside what
 * implementations accept.
 */
export const MILKY_TEXT_LIMIT = 3_000;

/**
 * An LLM answer as QQ messages: QQ has no Markdown, so the answer is rendered to plain text
 * from the same parse tree Telegram's HTML comes from (`@nahida/text`), then split at
 * paragraph, line and word boundaries. Plain text has no markup a cut could break.
 * @param limit the most UTF-16 code units per message, an integer ≥ 2 (default 3000)
 */
export function renderMilkyChunks(markdown: string, limit: number = MILKY_TEXT_LIMIT): string[] {
  return chunkText(renderPlainText(parseMarkdown(markdown.replace(/\r\n?/g, "\n"))), limit);
}
