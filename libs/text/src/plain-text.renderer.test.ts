import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../../test/support/seeded-random";
import { parseMarkdown } from "./markdown.parser";
import { renderPlainText } from "./plain-text.renderer";
import { HORIZONTAL_RULE } from "./text-layout";

const plain = (markdown: string): string => renderPlainText(parseMarkdown(markdown));

describe("renderPlainText", () => {
  it.each(["", "  \n\n", "#", "```\n```", ">"])("renders %j as nothing", (markdown) => {
    expect(plain(markdown)).toBe("");
  });

  it.each([
    ["**bold** _italic_ ~~strike~~", "bold italic strike"],
    ["**bold _and italic_** ***both***", "bold and italic both"],
    ["use `a < b && *c*` here", "use a < b && *c* here"],
    ["\\*not italic\\* \\\\", "*not italic* \\"],
    ["<b>not a tag</b> & more", "<b>not a tag</b> & more"],
  ])("removes the markup of %j", (markdown, text) => {
    expect(plain(markdown)).toBe(text);
  });

  it.each(["**unclosed bold", "unopened**", "`tick", "[no target]", "[x](javascript:alert(1))", "~5 min", "snake_case_name", "2 * 3 * 4"])(
    "keeps unterminated or unsafe markup %j as written",
    (markdown) => {
      expect(plain(markdown)).toBe(markdown);
    },
  );

  it.each([
    ["[site](https://e.com)", "site (https://e.com)"],
    ["[**bold** `code`](https://e.com/a_b)", "bold code (https://e.com/a_b)"],
    ["<https://e.com/a_b>", "https://e.com/a_b"],
    ["[](https://e.com)", "https://e.com"],
    ["[https://e.com](https://e.com)", "https://e.com"],
    ["![diagram](https://e.com/d.png)", "diagram (https://e.com/d.png)"],
    ["mail [me](mailto:a@b.c).", "mail me (mailto:a@b.c)."],
    ["see https://e.com/_a_/b*c*d.", "see https://e.com/_a_/b*c*d."],
  ])("writes links %j as %j", (markdown, text) => {
    expect(plain(markdown)).toBe(text);
  });

  it("writes headings as their text", () => {
    expect(plain("# Title **b** ##\ntext")).toBe("Title b\ntext");
  });

  it("keeps code blocks as written, without fences", () => {
    expect(plain("Run:\n```sh\nnpm test -- **/*.ts\n  --watch\n```\ndone")).toBe("Run:\nnpm test -- **/*.ts\n  --watch\ndone");
  });

  it("draws lists with bullets, task boxes and their numbers", () => {
    expect(plain("- one\n* two\n  + nested *it*\n- [ ] todo\n- [x] done\n1. first\n007) seventh")).toBe(
      "• one\n• two\n  • nested it\n• ☐ todo\n• ☑ done\n1. first\n007) seventh",
    );
  });

  it("prefixes quoted lines, code in quotes included", () => {
    expect(plain("> quote **b**\n> > nested\n>\n> ```\n> x\n> ```\nafter")).toBe("> quote b\n> nested\n>\n> x\nafter");
  });

  it("draws rules and keeps the blank lines between blocks, not at the ends", () => {
    expect(plain("\n\na\n\n\n---\nb\n\n")).toBe(`a\n\n\n${HORIZONTAL_RULE}\nb`);
  });

  it("keeps emoji, surrogate pairs and very long words whole", () => {
    expect(plain("😀 **👨‍👩‍👧** _纳西妲_")).toBe("😀 👨‍👩‍👧 纳西妲");
    const word = "x".repeat(50_000);
    expect(plain(`**${word}**`)).toBe(word);
  });

  it("renders a typical LLM answer", () => {
    const markdown = [
      "## Summary",
      "",
      "Here is what I found about `parse_mode`:",
      "",
      "1. **HTML** is the most forgiving.",
      "2. *MarkdownV2* needs escaping.",
      "",
      "- See [the docs](https://core.telegram.org/bots/api)",
      "",
      "```ts",
      "await send(chatId, html);",
      "```",
      "",
      "> Tip: keep messages short.",
    ].join("\n");
    expect(plain(markdown)).toBe(
      [
        "Summary",
        "",
        "Here is what I found about parse_mode:",
        "",
        "1. HTML is the most forgiving.",
        "2. MarkdownV2 needs escaping.",
        "",
        "• See the docs (https://core.telegram.org/bots/api)",
        "",
        "await send(chatId, html);",
        "",
        "> Tip: keep messages short.",
      ].join("\n"),
    );
  });

  it("renders random inputs without throwing and keeps text without markup as it is", () => {
    const pieces = ["*", "**", "_", "~~", "`", "```\n", "[", "](https://x.y)", "<", "> ", "# ", "- ", "\n", "\n\n", " ", "word", "😀", "\\"];
    const random = mulberry32(0x91a1);
    for (let i = 0; i < 2000; i++) {
      let markdown = "";
      const length = 1 + Math.floor(random() * 40);
      for (let j = 0; j < length; j++) markdown += pieces[Math.floor(random() * pieces.length)];
      expect(() => plain(markdown)).not.toThrow();
    }
    expect(plain("Just words, 纳西妲 😀!\nAnd a second line.")).toBe("Just words, 纳西妲 😀!\nAnd a second line.");
  });
});
