import type { MarkdownBlock, MarkdownCodeBlock, MarkdownHeading, MarkdownInline, MarkdownListItem } from "./markdown-tree";

/** What a text renderer supplies to `layoutBlocks`: its inline rendering and its own blocks. */
export interface TextBlockStyle {
  /** A paragraph's or a list item's content. */
  inline(children: MarkdownInline[]): string;
  heading(heading: MarkdownHeading): string;
  /** Only called for code that is not blank. */
  codeBlock(block: MarkdownCodeBlock, inQuote: boolean): string;
  /** `inner` is the quote's blocks laid out; never empty. */
  quote(inner: string): string;
  /** Applied to what the layout writes itself: list markers and the rule. */
  escape(text: string): string;
}

/** What a thematic break (`---`) renders as. */
export const HORIZONTAL_RULE = "──────────";

/**
 * Lays blocks out as lines of text, the way every text renderer does so that channels look
 * alike: one block a line, a blank line for each `blankLine`, bullets as "• ", task boxes as
 * ☐/☑, numbers as written, a rule as a line of `─`. Blocks that render empty (blank code,
 * empty quotes) and blank lines at either end are dropped.
 */
export function layoutBlocks(blocks: MarkdownBlock[], style: TextBlockStyle): string {
  return layout(blocks, style, false);
}

function layout(blocks: MarkdownBlock[], style: TextBlockStyle, inQuote: boolean): string {
  return joinBlockLines(blocks.map((block) => layoutBlock(block, style, inQuote)));
}

function layoutBlock(block: MarkdownBlock, style: TextBlockStyle, inQuote: boolean): string {
  switch (block.kind) {
    case "paragraph":
      return style.inline(block.children);
    case "heading":
      return style.heading(block);
    case "codeBlock":
      return block.code.trim() === "" ? "" : style.codeBlock(block, inQuote);
    case "quote": {
      const inner = layout(block.children, style, true);
      return inner === "" ? "" : style.quote(inner);
    }
    case "list":
      return block.items.map((item) => `${style.escape(listItemMarker(item))}${style.inline(item.children)}`).join("\n");
    case "rule":
      return style.escape(HORIZONTAL_RULE);
    case "blankLine":
      return "";
    default: {
      const unreachable: never = block;
      throw new Error(`unknown block ${JSON.stringify(unreachable)}`);
    }
  }
}

function listItemMarker(item: MarkdownListItem): string {
  if (item.marker.kind === "ordered") return `${item.indent}${item.marker.number}${item.marker.delimiter} `;
  const box = item.checked === undefined ? "" : item.checked ? "☑ " : "☐ ";
  return `${item.indent}• ${box}`;
}

function joinBlockLines(lines: string[]): string {
  let start = 0;
  let end = lines.length;
  while (start < end && (lines[start] ?? "").trim() === "") start++;
  while (end > start && (lines[end - 1] ?? "").trim() === "") end--;
  return lines.slice(start, end).join("\n");
}
