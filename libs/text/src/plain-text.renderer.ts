import type { MarkdownDocument, MarkdownInline } from "./markdown-tree";
import { layoutBlocks, type TextBlockStyle } from "./text-layout";

/**
 * Renders the tree as plain text, for a channel without rich text: markup removed, headings
 * as their text, bullets as "• ", task boxes as ☐/☑, rules as a line, code as written
 * (without fences or backticks), quoted lines prefixed with "> ", links and images as
 * "text (url)" (just the url when the text is empty or the url itself). Line breaks and
 * blank lines between blocks are kept; blank lines at the ends and empty blocks are not.
 */
export function renderPlainText(document: MarkdownDocument): string {
  return layoutBlocks(document.blocks, PLAIN_STYLE);
}

const PLAIN_STYLE: TextBlockStyle = {
  inline: renderInline,
  heading: (heading) => renderInline(heading.children),
  codeBlock: (block) => block.code,
  quote: (inner) => inner.replace(/^/gm, "> ").replace(/^> $/gm, ">"),
  escape: (text) => text,
};

function renderInline(nodes: MarkdownInline[]): string {
  let text = "";
  for (const node of nodes) {
    switch (node.kind) {
      case "text":
        text += node.text;
        break;
      case "url":
        text += node.url;
        break;
      case "code":
        text += node.code;
        break;
      case "bold":
      case "italic":
      case "strike":
        text += renderInline(node.children);
        break;
      case "link":
        text += withTarget(renderInline(node.children), node.href);
        break;
      case "image":
        text += withTarget(renderInline(node.alt), node.src);
        break;
      default: {
        const unreachable: never = node;
        throw new Error(`unknown inline node ${JSON.stringify(unreachable)}`);
      }
    }
  }
  return text;
}

function withTarget(text: string, url: string): string {
  return text.trim() === "" || text === url ? url : `${text} (${url})`;
}
