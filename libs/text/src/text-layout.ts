import type { MarkdownListItem } from "./markdown-tree";

/**
 * How text renderers lay blocks out, shared so every channel's text looks alike: one block
 * a line (a blank line is an empty entry), list markers and rules drawn with characters.
 */

/** What a thematic break (`---`) renders as. */
export const HORIZONTAL_RULE = "──────────";

/** An item's indentation and marker, ready for its text: "  • ", "• ☐ ", "• ☑ ", "2) ". */
export function listItemMarker(item: MarkdownListItem): string {
  if (item.marker.kind === "ordered") return `${item.indent}${item.marker.number}${item.marker.delimiter} `;
  const box = item.checked === undefined ? "" : item.checked ? "☑ " : "☐ ";
  return `${item.indent}• ${box}`;
}

/** Joins rendered blocks with line breaks, dropping the blank ones at either end. */
export function joinBlockLines(lines: string[]): string {
  let start = 0;
  let end = lines.length;
  while (start < end && (lines[start] ?? "").trim() === "") start++;
  while (end > start && (lines[end - 1] ?? "").trim() === "") end--;
  return lines.slice(start, end).join("\n");
}
