import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../../test/support/seeded-random";
import { findTelegramHtmlProblem } from "./telegram-html-validator";
import { chunkText, markdownToTelegramHtml, renderTelegramChunks, telegramHtmlToText, type TelegramChunk } from "./telegram-text";


/** Every chunk is well-formed, non-empty and fits, both as rendered and as the plain fallback. */
function expectSendable(chunks: TelegramChunk[], limit: number, source: string): void {
  for (const { html, plain } of chunks) {
    const context = `for ${JSON.stringify(source.slice(0, 200))} → ${JSON.stringify(html.slice(0, 200))}`;
    expect(findTelegramHtmlProblem(html), context).toBeUndefined();
    expect(telegramHtmlToText(html).length, context).toBeLessThanOrEqual(limit);
    expect(telegramHtmlToText(html).trim(), context).not.toBe("");
    expect(plain.length, context).toBeLessThanOrEqual(limit);
    expect(plain.trim(), context).not.toBe("");
  }
}

describe("telegramHtmlToText", () => {
  it("drops tags and decodes entities, as Telegram counts", () => {
    expect(telegramHtmlToText('<b>a</b> &amp; <a href="https://x.y?a=1&amp;b=2">link</a> &lt;&gt;&quot;&#65;&#x42;')).toBe(
      'a & link <>"AB',
    );
  });
});

describe("renderTelegramChunks", () => {
  it("renders a short answer as one chunk with its source as the plain fallback", () => {
    expect(renderTelegramChunks("**Hi** <there>")).toEqual([{ html: "<b>Hi</b> &lt;there&gt;", plain: "**Hi** <there>" }]);
  });

  it.each(["", "  \n\n "])("gives nothing for blank input %j", (markdown) => {
    expect(renderTelegramChunks(markdown)).toEqual([]);
  });

  it("rejects a bad limit", () => {
    expect(() => renderTelegramChunks("x", 1)).toThrow(RangeError);
  });

  it("splits a 5000-character answer into two sendable chunks at a paragraph break", () => {
    const paragraph = (n: number): string => `Paragraph ${n}: ${"**lorem** ipsum & dolor <sit> amet, ".repeat(12)}`.trim();
    const markdown = Array.from({ length: 12 }, (_, i) => paragraph(i)).join("\n\n");
    expect(markdown.length).toBeGreaterThan(5000);
    expect(markdown.length).toBeLessThan(5600);
    const chunks = renderTelegramChunks(markdown);
    expect(chunks).toHaveLength(2);
    expectSendable(chunks, 4096, markdown);
    expect(chunks.map((chunk) => chunk.plain).join("\n\n")).toBe(markdown);
    expect(chunks[1]?.plain.startsWith("Paragraph ")).toBe(true);
  });

  it("never leaves formatting open across a cut", () => {
    const markdown = `**${"bold words ".repeat(30)}**`;
    const chunks = renderTelegramChunks(markdown, 100);
    expect(chunks.length).toBeGreaterThan(2);
    expectSendable(chunks, 100, markdown);
  });

  describe("code blocks cut across chunks", () => {
    const code = Array.from({ length: 120 }, (_, i) => `    value_${i} = compute(a < b && c > ${i})`).join("\n");
    const markdown = `Here is the script:\n\n\`\`\`python\n${code}\n\`\`\`\n\nThat's all.`;
    const chunks = renderTelegramChunks(markdown, 1000);

    it("are sendable", () => {
      expect(chunks.length).toBeGreaterThan(4);
      expectSendable(chunks, 1000, markdown);
    });

    it("close the block at the cut and reopen it with its language", () => {
      const codeChunks = chunks.filter((chunk) => chunk.html.includes("<pre>"));
      expect(codeChunks.length).toBe(chunks.length);
      for (const chunk of chunks) {
        expect(chunk.html).toContain('<pre><code class="language-python">');
        expect(chunk.html).not.toContain("<i>");
      }
      for (const chunk of chunks.slice(1)) expect(chunk.plain.startsWith("```python\n")).toBe(true);
      for (const chunk of chunks.slice(0, -1)) expect(chunk.plain.endsWith("\n```")).toBe(true);
    });

    it("keep every line of code, in order", () => {
      const shown = chunks.map((chunk) => telegramHtmlToText(chunk.html)).join("\n");
      for (let i = 0; i < 120; i++) expect(shown).toContain(`value_${i} = compute(a < b && c > ${i})`);
    });
  });

  it("does not send an empty block when the cut falls right before the closing fence", () => {
    const body = "x".repeat(40);
    const markdown = `\`\`\`\n${body}\n${body}\n\`\`\`\nafter the block`;
    const chunks = renderTelegramChunks(markdown, 90);
    expectSendable(chunks, 90, markdown);
    for (const chunk of chunks) expect(chunk.html).not.toMatch(/<pre>\s*<\/pre>/);
    expect(chunks.at(-1)?.html).toContain("after the block");
  });

  it("moves a fence opener that ends a chunk into the next chunk", () => {
    // Limit 90 leaves a budget of 78 once room for the two fence lines is kept: the last line
    // break that fits is the one right after "```js".
    const markdown = `${"intro ".repeat(10).trim()}\n\`\`\`js\n${"x".repeat(60)}\n\`\`\``;
    const chunks = renderTelegramChunks(markdown, 90);
    expectSendable(chunks, 90, markdown);
    expect(chunks[0]?.plain).not.toContain("```");
    expect(chunks[1]?.plain.startsWith("```js\n")).toBe(true);
  });

  it("re-splits when rendering makes a chunk longer than the limit", () => {
    // Each "---" (3 characters) renders as a 10-character rule.
    const markdown = Array.from({ length: 30 }, () => "---").join("\n");
    const chunks = renderTelegramChunks(markdown, 100);
    expectSendable(chunks, 100, markdown);
    expect(chunks.length).toBeGreaterThan(3);
  });

  it("falls back to escaped plain text when a piece renders several times longer than its source", () => {
    expect(renderTelegramChunks("---", 8)).toEqual([{ html: "---", plain: "---" }]);
  });

  it("measures what Telegram shows, not the HTML markup, against the limit", () => {
    expect(renderTelegramChunks("<b>&", 4)).toEqual([{ html: "&lt;b&gt;&amp;", plain: "<b>&" }]);
    expect(renderTelegramChunks("**bold**", 8)).toEqual([{ html: "<b>bold</b>", plain: "**bold**" }]);
  });

  it("keeps each chunk's plain text equal to the Markdown it was rendered from", () => {
    const markdown = "# Title\n\n- **one**\n- _two_\n\n> quoted `code`\n\n[link](https://x.y)";
    for (const chunk of renderTelegramChunks(markdown, 30)) expect(markdownToTelegramHtml(chunk.plain)).toBe(chunk.html);
  });

  it("counts UTF-16 code units and keeps surrogate pairs whole", () => {
    const markdown = "😀".repeat(3000);
    const chunks = renderTelegramChunks(markdown);
    expectSendable(chunks, 4096, markdown);
    expect(chunks.map((chunk) => chunk.plain).join("")).toBe(markdown);
  });

  it("normalizes CRLF before cutting", () => {
    const markdown = "```\r\ncode\r\n```\r\n\r\n**done**";
    expect(renderTelegramChunks(markdown)).toEqual([{ html: "<pre>code</pre>\n\n<b>done</b>", plain: "```\ncode\n```\n\n**done**" }]);
  });

  it("is sendable for thousands of random inputs and small limits", () => {
    const pieces = [
      "**", "*", "_", "__", "~~", "`", "```", "```ts\n", "\n```\n", "[a](https://x.y/", ")", "](", "<", ">", "&", "\n",
      "\n\n", "> ", "# ", "- ", "1. ", "---", " ", "word ", "longerword", "snake_case ", "😀", "👨‍👩‍👧", "纳西妲", "\\",
    ];
    const random = mulberry32(42);
    for (let i = 0; i < 1500; i++) {
      let markdown = "";
      const length = 1 + Math.floor(random() * 80);
      for (let j = 0; j < length; j++) markdown += pieces[Math.floor(random() * pieces.length)];
      const limit = 8 + Math.floor(random() * 120);
      expectSendable(renderTelegramChunks(markdown, limit), limit, markdown);
    }
  });

  it("re-exports chunkText and markdownToTelegramHtml", () => {
    expect(chunkText("a b", 2)).toEqual(["a", "b"]);
    expect(markdownToTelegramHtml("*x*")).toBe("<i>x</i>");
  });
});
