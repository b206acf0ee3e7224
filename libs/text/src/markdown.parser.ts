import { isFenceClose, parseFenceOpen } from "./code-fence";
import { parseInline } from "./markdown-inline.parser";
import type { MarkdownBlock, MarkdownDocument, MarkdownHeading, MarkdownListItem } from "./markdown-tree";

const QUOTE_PREFIX = /^(?:[ \t]{0,3}>[ \t]?)+/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*))?$/;
const THEMATIC_BREAK = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const BULLET_ITEM = /^([ \t]*)[-*+][ \t]+(.*)$/;
const ORDERED_ITEM = /^([ \t]*)(\d{1,9})([.)])[ \t]+(.*)$/;
const TASK_BOX = /^\[([ xX])\][ \t]+/;

/**
 * Parses Markdown as LLMs write it into a channel-neutral tree (see `MarkdownDocument` for
 * what is recognized). Pure and total: any string parses, unmatched markup stays text, an
 * unclosed code fence runs to the end, CRLF and CR count as line breaks. Source HTML is
 * never interpreted: `<b>` is text.
 */
export function parseMarkdown(markdown: string): MarkdownDocument {
  return { blocks: parseBlocks(markdown.replace(/\r\n?/g, "\n").split("\n")) };
}

function parseBlocks(lines: string[]): MarkdownBlock[] {
  const blocks: MarkdownBlock[] = [];
  let paragraph: string[] = [];
  const flushParagraph = (): void => {
    if (paragraph.length > 0) blocks.push({ kind: "paragraph", children: parseInline(paragraph.join("\n")) });
    paragraph = [];
  };
  const pushItem = (ordered: boolean, item: MarkdownListItem): void => {
    const last = blocks.at(-1);
    if (last?.kind === "list" && last.ordered === ordered) last.items.push(item);
    else blocks.push({ kind: "list", ordered, items: [item] });
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const fence = parseFenceOpen(line);
    if (fence !== undefined) {
      flushParagraph();
      const code: string[] = [];
      const indent = new RegExp(`^[ \\t]{0,${fence.indent}}`);
      for (i++; i < lines.length && !isFenceClose(lines[i] ?? "", fence); i++) code.push((lines[i] ?? "").replace(indent, ""));
      blocks.push({ kind: "codeBlock", language: fence.language, code: code.join("\n") });
      continue;
    }
    if (line.trim() === "") {
      flushParagraph();
      blocks.push({ kind: "blankLine" });
      continue;
    }
    if (QUOTE_PREFIX.test(line)) {
      flushParagraph();
      // The prefix takes every ">" at once, so quoted lines are never quoted again: no quote in a quote.
      const quoted: string[] = [];
      for (; i < lines.length && QUOTE_PREFIX.test(lines[i] ?? ""); i++) quoted.push((lines[i] ?? "").replace(QUOTE_PREFIX, ""));
      i--;
      blocks.push({ kind: "quote", children: parseBlocks(quoted) });
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading !== null) {
      flushParagraph();
      const [, hashes = "#", text = ""] = heading;
      const title = text.replace(/(?:^|[ \t]+)#+[ \t]*$/, "").trim();
      blocks.push({ kind: "heading", level: hashes.length as MarkdownHeading["level"], children: parseInline(title) });
      continue;
    }
    if (THEMATIC_BREAK.test(line)) {
      flushParagraph();
      blocks.push({ kind: "rule" });
      continue;
    }
    const bullet = BULLET_ITEM.exec(line);
    if (bullet !== null) {
      flushParagraph();
      const [, indent = "", content = ""] = bullet;
      const task = TASK_BOX.exec(content);
      pushItem(false, {
        indent,
        marker: { kind: "bullet" },
        checked: task === null ? undefined : task[1] !== " ",
        children: parseInline(task === null ? content : content.slice(task[0].length)),
      });
      continue;
    }
    const ordered = ORDERED_ITEM.exec(line);
    if (ordered !== null) {
      flushParagraph();
      const [, indent = "", number = "", delimiter = "", content = ""] = ordered;
      pushItem(true, {
        indent,
        marker: { kind: "ordered", number, delimiter: delimiter === ")" ? ")" : "." },
        checked: undefined,
        children: parseInline(content),
      });
      continue;
    }
    paragraph.push(line.trimEnd());
  }
  flushParagraph();
  return trimBlankLines(blocks);
}

function trimBlankLines(blocks: MarkdownBlock[]): MarkdownBlock[] {
  let start = 0;
  let end = blocks.length;
  while (start < end && blocks[start]?.kind === "blankLine") start++;
  while (end > start && blocks[end - 1]?.kind === "blankLine") end--;
  return blocks.slice(start, end);
}
