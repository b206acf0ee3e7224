import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../../test/support/seeded-random";
import { parseMarkdown } from "./markdown.parser";
import type { MarkdownBlock, MarkdownInline } from "./markdown-tree";

const text = (value: string): MarkdownInline => ({ kind: "text", text: value });

/** The inline children of a document that is one paragraph. */
function inline(markdown: string): MarkdownInline[] {
  const blocks = parseMarkdown(markdown).blocks;
  expect(blocks).toHaveLength(1);
  const [block] = blocks;
  if (block?.kind !== "paragraph") throw new Error(`expected a paragraph, got ${JSON.stringify(block)}`);
  return block.children;
}

/** The tree's documented invariants, checked over a whole document. */
function expectWellFormed(blocks: MarkdownBlock[], inQuote = false): void {
  expect(blocks[0]?.kind).not.toBe("blankLine");
  expect(blocks.at(-1)?.kind).not.toBe("blankLine");
  for (const block of blocks) {
    switch (block.kind) {
      case "paragraph":
      case "heading":
        expectInlineWellFormed(block.children, false);
        break;
      case "quote":
        expect(inQuote, "a quote inside a quote").toBe(false);
        expectWellFormed(block.children, true);
        break;
      case "list":
        for (const item of block.items) {
          expect(item.marker.kind === "ordered").toBe(block.ordered);
          expectInlineWellFormed(item.children, false);
        }
        break;
      default:
    }
  }
}

function expectInlineWellFormed(nodes: MarkdownInline[], inLink: boolean): void {
  nodes.forEach((node, i) => {
    if (node.kind === "text") {
      expect(node.text).not.toBe("");
      expect(nodes[i - 1]?.kind, "adjacent text nodes").not.toBe("text");
    }
    if (node.kind === "link" || node.kind === "image") expect(inLink, "a link inside a link").toBe(false);
    if (node.kind === "link") expectInlineWellFormed(node.children, true);
    else if (node.kind === "image") expectInlineWellFormed(node.alt, true);
    else if (node.kind === "bold" || node.kind === "italic" || node.kind === "strike") expectInlineWellFormed(node.children, inLink);
  });
}

describe("parseMarkdown", () => {
  it.each(["", " ", "\n\n\t\n", "\r\n"])("gives no blocks for blank input %j", (markdown) => {
    expect(parseMarkdown(markdown)).toEqual({ blocks: [] });
  });

  describe("inline", () => {
    it("keeps line breaks inside a paragraph as text", () => {
      expect(inline("first\nsecond  ")).toEqual([text("first\nsecond")]);
    });

    it("nests emphasis", () => {
      expect(inline("**bold _and italic_** and ~~gone~~")).toEqual([
        { kind: "bold", children: [text("bold "), { kind: "italic", children: [text("and italic")] }] },
        text(" and "),
        { kind: "strike", children: [text("gone")] },
      ]);
      expect(inline("***both***")).toEqual([{ kind: "italic", children: [{ kind: "bold", children: [text("both")] }] }]);
    });

    it("resolves crossed markers into nesting, the left-over marker as text", () => {
      expect(inline("**a *b c**")).toEqual([
        text("*"),
        { kind: "italic", children: [text("a "), { kind: "italic", children: [text("b c")] }] },
      ]);
    });

    it.each(["**unclosed bold", "unopened*", "`unclosed code", "[unclosed](mailto:a@b.c", "[no target]", "~~", "~5 min", "snake_case_name"])(
      "keeps unterminated markup %j as one text node",
      (markdown) => {
        expect(inline(markdown)).toEqual([text(markdown)]);
      },
    );

    it("resolves backslash escapes", () => {
      expect(inline("\\*not italic\\* \\\\ a \\ b")).toEqual([text("*not italic* \\ a \\ b")]);
    });

    it("keeps markup inside code as written", () => {
      expect(inline("*a `**b**` c*")).toEqual([{ kind: "italic", children: [text("a "), { kind: "code", code: "**b**" }, text(" c")] }]);
      expect(inline("`` `tick` ``")).toEqual([{ kind: "code", code: "`tick`" }]);
    });

    it("parses links, images and autolinks, with formatted text", () => {
      expect(inline("[**site**](https://e.com \"T\") ![alt](https://e.com/a.png) <mailto:a@b.c>")).toEqual([
        { kind: "link", href: "https://e.com", children: [{ kind: "bold", children: [text("site")] }] },
        text(" "),
        { kind: "image", src: "https://e.com/a.png", alt: [text("alt")] },
        text(" "),
        { kind: "link", href: "mailto:a@b.c", children: [text("mailto:a@b.c")] },
      ]);
    });

    it("keeps a link with an unsafe target as text, still formatting its text", () => {
      expect(inline("[**x**](javascript:void)")).toEqual([text("["), { kind: "bold", children: [text("x")] }, text("](javascript:void)")]);
    });

    it("does not nest links", () => {
      expect(inline("[a [b](https://inner) c](https://outer)")).toEqual([
        { kind: "link", href: "https://outer", children: [text("a [b]("), { kind: "url", url: "https://inner" }, text(") c")] },
      ]);
    });

    it("marks bare URLs, keeping their markers and leaving out sentence punctuation", () => {
      expect(inline("see https://x.y/_a_/b*c*, (https://x.y/a_b).")).toEqual([
        text("see "),
        { kind: "url", url: "https://x.y/_a_/b*c" },
        text("*, ("),
        { kind: "url", url: "https://x.y/a_b" },
        text(")."),
      ]);
    });

    it("keeps very long words and surrogate pairs whole", () => {
      const word = "x".repeat(100_000);
      expect(inline(word)).toEqual([text(word)]);
      expect(inline("😀".repeat(500))).toEqual([text("😀".repeat(500))]);
    });

    it("lets emoji flank emphasis", () => {
      expect(inline("😀**👨‍👩‍👧**😀 _纳西妲_")).toEqual([
        text("😀"),
        { kind: "bold", children: [text("👨‍👩‍👧")] },
        text("😀 "),
        { kind: "italic", children: [text("纳西妲")] },
      ]);
    });
  });

  describe("blocks", () => {
    it("parses headings with their level, dropping closing hashes", () => {
      expect(parseMarkdown("# One\n### Three **b** ###\n#\n#hashtag").blocks).toEqual([
        { kind: "heading", level: 1, children: [text("One")] },
        { kind: "heading", level: 3, children: [text("Three "), { kind: "bold", children: [text("b")] }] },
        { kind: "heading", level: 1, children: [] },
        { kind: "paragraph", children: [text("#hashtag")] },
      ]);
    });

    it("parses code blocks with their language, markup inside kept as written", () => {
      expect(parseMarkdown("```ts\nconst a = `**x**`;\n```\n~~~\n<b>\n~~~").blocks).toEqual([
        { kind: "codeBlock", language: "ts", code: "const a = `**x**`;" },
        { kind: "codeBlock", language: undefined, code: "<b>" },
      ]);
    });

    it("runs an unclosed fence to the end and keeps an empty one", () => {
      expect(parseMarkdown("```\n```\n```py\nx\n**y").blocks).toEqual([
        { kind: "codeBlock", language: undefined, code: "" },
        { kind: "codeBlock", language: "py", code: "x\n**y" },
      ]);
    });

    it("groups item lines into lists, bullets apart from numbers", () => {
      expect(parseMarkdown("- one\n  * two\n- [ ] todo\n- [x] done\n007. seven\n2) two").blocks).toEqual([
        {
          kind: "list",
          ordered: false,
          items: [
            { indent: "", marker: { kind: "bullet" }, checked: undefined, children: [text("one")] },
            { indent: "  ", marker: { kind: "bullet" }, checked: undefined, children: [text("two")] },
            { indent: "", marker: { kind: "bullet" }, checked: false, children: [text("todo")] },
            { indent: "", marker: { kind: "bullet" }, checked: true, children: [text("done")] },
          ],
        },
        {
          kind: "list",
          ordered: true,
          items: [
            { indent: "", marker: { kind: "ordered", number: "007", delimiter: "." }, checked: undefined, children: [text("seven")] },
            { indent: "", marker: { kind: "ordered", number: "2", delimiter: ")" }, checked: undefined, children: [text("two")] },
          ],
        },
      ]);
    });

    it("does not let emphasis cross from one item into the next", () => {
      const [list] = parseMarkdown("- **a\n- b**").blocks;
      expect(list?.kind === "list" && list.items.map((item) => item.children)).toEqual([[text("**a")], [text("b**")]]);
    });

    it("parses quotes, flattening nested ones and keeping code inside", () => {
      expect(parseMarkdown("> quote\n> > nested\n>\n> ```js\n> a\n> ```\nafter").blocks).toEqual([
        {
          kind: "quote",
          children: [
            { kind: "paragraph", children: [text("quote\nnested")] },
            { kind: "blankLine" },
            { kind: "codeBlock", language: "js", code: "a" },
          ],
        },
        { kind: "paragraph", children: [text("after")] },
      ]);
      expect(parseMarkdown(">\n> ").blocks).toEqual([{ kind: "quote", children: [] }]);
    });

    it("keeps blank lines between blocks and rules, not at the ends", () => {
      expect(parseMarkdown("\n\na\n\n\n---\n* * *\n\n").blocks).toEqual([
        { kind: "paragraph", children: [text("a")] },
        { kind: "blankLine" },
        { kind: "blankLine" },
        { kind: "rule" },
        { kind: "rule" },
      ]);
    });

    it("reads CRLF and CR as line breaks", () => {
      expect(parseMarkdown("a\r\nb\rc").blocks).toEqual([{ kind: "paragraph", children: [text("a\nb\nc")] }]);
    });
  });

  describe("is total", () => {
    const pieces = [
      "*", "**", "_", "__", "~~", "~", "`", "```", "```py\n", "\n```\n", "[", "]", "(", ")", "](", "![", "<", ">", "&",
      "https://e.com/a_b", "javascript:x", "\n", "\n\n", "> ", ">> ", "# ", "- ", "1. ", "- [ ] ", "---", " ", "\t",
      "word", "\\", "😀", "👨‍👩‍👧", "\ud800", "\udc00", "纳西妲", "\r",
    ];

    it("parses thousands of random inputs into well-formed trees", () => {
      const random = mulberry32(0x7ee);
      for (let i = 0; i < 3000; i++) {
        let markdown = "";
        const length = 1 + Math.floor(random() * 50);
        for (let j = 0; j < length; j++) markdown += pieces[Math.floor(random() * pieces.length)];
        expectWellFormed(parseMarkdown(markdown).blocks);
      }
    });

    it("stays fast on adversarial input", () => {
      const started = performance.now();
      parseMarkdown(`${"*a ".repeat(5000)}${"[".repeat(5000)}${"`".repeat(3000)}${" ``".repeat(2000)}`);
      parseMarkdown(`${"**".repeat(10_000)}x`);
      parseMarkdown("> ".repeat(10_000));
      expect(performance.now() - started).toBeLessThan(2000);
    });
  });
});
