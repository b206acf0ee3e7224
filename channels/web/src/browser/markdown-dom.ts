import { parseMarkdown, type MarkdownBlock, type MarkdownInline } from "@nahida/text";
import { el } from "./dom";

/**
 * Markdown → DOM nodes, for the bot's messages. Inert by construction: every piece of text
 * is a text node (never HTML), links come only from the parser's allow-list of schemes
 * (http, https, tg, mailto) and open in a new tab without a referrer, and images are shown
 * as links (the page loads nothing from elsewhere).
 */
export function renderMarkdown(markdown: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  for (const block of parseMarkdown(markdown).blocks) {
    const node = renderBlock(block);
    if (node) fragment.append(node);
  }
  return fragment;
}

function renderBlock(block: MarkdownBlock): Node | null {
  switch (block.kind) {
    case "paragraph":
      return el("p", {}, renderInline(block.children));
    case "heading":
      return el(`h${Math.min(block.level + 2, 6)}` as "h3", {}, renderInline(block.children));
    case "codeBlock": {
      const code = el("code", {}, [block.code]);
      if (block.language) code.dataset.language = block.language;
      return el("pre", {}, [code]);
    }
    case "quote":
      return el("blockquote", {}, block.children.map(renderBlock).filter((n): n is Node => n !== null));
    case "list": {
      const list = el(block.ordered ? "ol" : "ul");
      const first = block.items[0]?.marker;
      if (first?.kind === "ordered") list.setAttribute("start", String(Number.parseInt(first.number, 10) || 1));
      for (const item of block.items) {
        const li = el("li", {}, renderInline(item.children));
        if (item.checked !== undefined) li.prepend(item.checked ? "☑ " : "☐ ");
        if (item.indent.length >= 2) li.classList.add("nested");
        list.append(li);
      }
      return list;
    }
    case "rule":
      return el("hr");
    case "blankLine":
      return null;
    default: {
      const unreachable: never = block;
      throw new Error(`unknown block ${JSON.stringify(unreachable)}`);
    }
  }
}

function link(href: string, children: (Node | string)[]): HTMLAnchorElement {
  const a = el("a", {}, children.length > 0 ? children : [href]);
  a.href = href;
  a.target = "_blank";
  a.rel = "noopener noreferrer nofollow";
  return a;
}

function renderInline(nodes: MarkdownInline[]): (Node | string)[] {
  return nodes.map((node): Node | string => {
    switch (node.kind) {
      case "text":
        return node.text;
      case "url":
        return link(node.url, []);
      case "code":
        return el("code", {}, [node.code]);
      case "bold":
        return el("strong", {}, renderInline(node.children));
      case "italic":
        return el("em", {}, renderInline(node.children));
      case "strike":
        return el("s", {}, renderInline(node.children));
      case "link":
        return link(node.href, renderInline(node.children));
      case "image":
        return link(node.src, renderInline(node.alt));
      default: {
        const unreachable: never = node;
        throw new Error(`unknown inline ${JSON.stringify(unreachable)}`);
      }
    }
  });
}
