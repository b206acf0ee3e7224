import { layoutBlocks, parseMarkdown, type MarkdownInline, type TextBlockStyle } from "@nahida/text";

/**
 * The Markdown tree of `@nahida/text` → Telegram's HTML subset.
 *
 * Output is well-formed by construction: every tag is emitted by the renderer together with
 * its closing tag around an already-rendered subtree, and every piece of source text goes
 * through `escapeHtml`. Source HTML is never passed through. Nesting follows Telegram's
 * rules: nothing inside `code`/`pre`, no link inside a link, no code inside a link, no
 * blockquote or `pre` inside a blockquote, and no style inside the same style.
 */

type StyleTag = "b" | "i" | "s";

interface RenderContext {
  active: ReadonlySet<StyleTag>;
  inLink: boolean;
}

const STYLE_TAGS = { bold: "b", italic: "i", strike: "s" } as const satisfies Record<string, StyleTag>;

/** Escapes `&`, `<` and `>` for Telegram HTML text. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>]/g, (char) => (char === "&" ? "&amp;" : char === "<" ? "&lt;" : "&gt;"));
}

function escapeAttribute(text: string): string {
  return escapeHtml(text).replace(/"/g, "&quot;");
}

/**
 * Renders Markdown into Telegram HTML (`parse_mode: "HTML"`), as `parseMarkdown` reads it:
 * bold, italic, strike, inline code, fenced code blocks with a language, links, `# headings`
 * as bold lines, bullets as `• ` (task boxes as ☐/☑), numbered lists unchanged, `>`
 * blockquotes, `---` as a horizontal rule. Bare URLs stay text for Telegram to link.
 * Line breaks are kept; blank lines at the ends and empty blocks are dropped.
 */
export function markdownToTelegramHtml(markdown: string): string {
  return layoutBlocks(parseMarkdown(markdown).blocks, TELEGRAM_STYLE);
}

const TELEGRAM_STYLE: TextBlockStyle = {
  inline: (children) => renderInline(children),
  heading: (heading) => {
    const rendered = renderInline(heading.children, new Set(["b"]));
    return rendered === "" ? "" : `<b>${rendered}</b>`;
  },
  codeBlock: ({ code, language }, inQuote) => {
    // Telegram allows no pre inside a blockquote: quoted code is kept as plain text.
    if (inQuote) return escapeHtml(code);
    if (language === undefined) return `<pre>${escapeHtml(code)}</pre>`;
    return `<pre><code class="language-${escapeAttribute(language)}">${escapeHtml(code)}</code></pre>`;
  },
  quote: (inner) => `<blockquote>${inner}</blockquote>`,
  escape: escapeHtml,
};

function renderInline(nodes: MarkdownInline[], active: ReadonlySet<StyleTag> = new Set()): string {
  return renderNodes(nodes, { active, inLink: false });
}

function renderNodes(nodes: MarkdownInline[], context: RenderContext): string {
  let html = "";
  for (const node of nodes) {
    switch (node.kind) {
      case "text":
        html += escapeHtml(node.text);
        break;
      case "url":
        // Plain text: Telegram links URLs itself.
        html += escapeHtml(node.url);
        break;
      case "code":
        html += context.inLink || node.code.trim() === "" ? escapeHtml(node.code) : `<code>${escapeHtml(node.code)}</code>`;
        break;
      case "link":
        html += renderLink(node.href, node.children, context);
        break;
      case "image":
        html += renderLink(node.src, node.alt, context);
        break;
      case "bold":
      case "italic":
      case "strike": {
        const tag = STYLE_TAGS[node.kind];
        if (context.active.has(tag)) {
          html += renderNodes(node.children, context);
          break;
        }
        const inner = renderNodes(node.children, { ...context, active: new Set([...context.active, tag]) });
        html += inner === "" ? "" : `<${tag}>${inner}</${tag}>`;
        break;
      }
      default: {
        const unreachable: never = node;
        throw new Error(`unknown inline node ${JSON.stringify(unreachable)}`);
      }
    }
  }
  return html;
}

function renderLink(href: string, children: MarkdownInline[], context: RenderContext): string {
  const inner = renderNodes(children, { ...context, inLink: true });
  return `<a href="${escapeAttribute(href)}">${inner === "" ? escapeHtml(href) : inner}</a>`;
}
