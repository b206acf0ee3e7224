import { describe, expect, it } from "vitest";
import { mulberry32 } from "../../../test/support/seeded-random";
import { escapeHtml, markdownToTelegramHtml as render } from "./markdown-to-telegram-html";
import { findTelegramHtmlProblem } from "./telegram-html-validator";


const FUZZ_PIECES = [
  "*", "**", "***", "_", "__", "~~", "~", "`", "``", "```", "```py\n", "\n```\n", "[", "]", "(", ")", "](", "![",
  "https://e.com/a_b", "http://x.y/(z)", "javascript:alert(1)", "tg://user?id=1", "mailto:a@b.c", "<", ">", "&", "\"",
  "'", "<b>", "</i>", "<script>", "&amp;", "\n", "\n\n", "> ", ">> ", "# ", "### ", "- ", "* ", "1. ", "- [ ] ", "---",
  " ", "  ", "\t", "word", "snake_case_name", "\\", "\\*", "!", "|", "😀", "👨‍👩‍👧", "é", "纳西妲", "a < b && c > d",
];

function fuzzInput(random: () => number, pieces: number): string {
  let text = "";
  for (let i = 0; i < pieces; i++) text += FUZZ_PIECES[Math.floor(random() * FUZZ_PIECES.length)];
  return text;
}

function expectValid(html: string, source: string): void {
  expect(findTelegramHtmlProblem(html), `for ${JSON.stringify(source)} → ${JSON.stringify(html)}`).toBeUndefined();
}

describe("markdownToTelegramHtml", () => {
  describe("emphasis", () => {
    it.each([
      ["**bold**", "<b>bold</b>"],
      ["__bold__", "<b>bold</b>"],
      ["*italic*", "<i>italic</i>"],
      ["_italic_", "<i>italic</i>"],
      ["~~strike~~", "<s>strike</s>"],
      ["***both***", "<i><b>both</b></i>"],
      ["**bold _and italic_**", "<b>bold <i>and italic</i></b>"],
      ["*a **b** c*", "<i>a <b>b</b> c</i>"],
      ["**Note:** text", "<b>Note:</b> text"],
      ["**Note:**text", "<b>Note:</b>text"],
      ["**注意：**这是重点", "<b>注意：</b>这是重点"],
      ["un*frigging*believable", "un<i>frigging</i>believable"],
      ["**bold**ly", "<b>bold</b>ly"],
      ["(*aside*)", "(<i>aside</i>)"],
      ["**multi\nline**", "<b>multi\nline</b>"],
    ])("%j → %j", (markdown, html) => {
      expect(render(markdown)).toBe(html);
    });

    it.each([
      "snake_case_name and file_name_here.py",
      "__init__py_thing",
      "2 * 3 * 4 = 24",
      "a * b",
      "*args and **kwargs",
      "**unclosed bold",
      "unopened bold**",
      "*",
      "**",
      "a **** b",
      "~5 min, ~10 min",
      "~single~",
      "a ~~~triple~~~ b",
      "** spaced **",
      "_ spaced _",
    ])("leaves %j literal", (markdown) => {
      expect(render(markdown)).toBe(escapeHtml(markdown));
    });

    it("resolves crossed markers into nested tags, never crossed ones", () => {
      expect(render("**a *b** c*")).toBe("<i>a b c</i>");
      expect(render("*a **b* c**")).toBe("<i>a b c</i>");
      // CommonMark pairs a closer with the nearest opener: the left-over "*" stays literal.
      expect(render("**a *b c**")).toBe("*<i>a b c</i>");
    });

    it("does not nest a style inside itself", () => {
      expect(render("**a __b__ c**")).toBe("<b>a b c</b>");
      expect(render("# Title with **bold**")).toBe("<b>Title with bold</b>");
    });

    it("honours backslash escapes", () => {
      expect(render("\\*not italic\\* and \\_not\\_ and \\\\")).toBe("*not italic* and _not_ and \\");
      expect(render("a \\ b")).toBe("a \\ b");
    });
  });

  describe("code", () => {
    it("renders inline code escaped and unformatted", () => {
      expect(render("use `a < b && *c*` here")).toBe("use <code>a &lt; b &amp;&amp; *c*</code> here");
    });

    it("handles double-backtick spans containing a backtick", () => {
      expect(render("``a ` b``")).toBe("<code>a ` b</code>");
      expect(render("`` `tick` ``")).toBe("<code>`tick`</code>");
    });

    it("keeps an unmatched backtick literal", () => {
      expect(render("a ` b *c*")).toBe("a ` b <i>c</i>");
    });

    it("lets code win over emphasis markers inside it", () => {
      expect(render("*a `*` b*")).toBe("<i>a <code>*</code> b</i>");
      expect(render("**`**`**")).toBe("<b><code>**</code></b>");
    });

    it("renders fenced blocks with a language", () => {
      expect(render("```python\nprint('<hi>')\n  x = a & b\n```")).toBe(
        '<pre><code class="language-python">print(\'&lt;hi&gt;\')\n  x = a &amp; b</code></pre>',
      );
    });

    it("renders fenced blocks without a language as pre", () => {
      expect(render("```\n**not bold**\n```")).toBe("<pre>**not bold**</pre>");
      expect(render("~~~\ncode\n~~~")).toBe("<pre>code</pre>");
    });

    it("keeps odd languages out of the class attribute", () => {
      expect(render('```"><script>\nx\n```')).toBe("<pre>x</pre>");
      expect(render("```c++ {linenos}\nint x;\n```")).toBe('<pre><code class="language-c++">int x;</code></pre>');
    });

    it("only closes a fence with the same marker, at least as long", () => {
      expect(render("````\n```\ninside\n````")).toBe("<pre>```\ninside</pre>");
      expect(render("```\n~~~\n```")).toBe("<pre>~~~</pre>");
    });

    it("strips the fence's indentation from the code (list items often indent fences)", () => {
      expect(render("1. step\n   ```sh\n   npm test\n     --watch\n   ```")).toBe(
        '1. step\n<pre><code class="language-sh">npm test\n  --watch</code></pre>',
      );
    });

    it("runs an unclosed fence to the end of the text", () => {
      expect(render("text\n```js\nconst x = 1;\n**still code**")).toBe(
        'text\n<pre><code class="language-js">const x = 1;\n**still code**</code></pre>',
      );
    });

    it("drops an empty code block", () => {
      expect(render("before\n```\n```\nafter")).toBe("before\n\nafter");
    });

    it("treats ```inline``` on one line as inline code, not a fence", () => {
      expect(render("```inline```")).toBe("<code>inline</code>");
    });
  });

  describe("links", () => {
    it.each([
      ["[site](https://example.com)", '<a href="https://example.com">site</a>'],
      ["[wiki](https://en.wikipedia.org/wiki/Foo_(bar))", '<a href="https://en.wikipedia.org/wiki/Foo_(bar)">wiki</a>'],
      ["[mail](mailto:a@b.c)", '<a href="mailto:a@b.c">mail</a>'],
      ["[me](tg://user?id=42)", '<a href="tg://user?id=42">me</a>'],
      ['[t](https://x.y "Title")', '<a href="https://x.y">t</a>'],
      ["[a](<https://x.y/a b>)", "[a](&lt;https://x.y/a b&gt;)"],
      ["[q](https://x.y/?a=1&b=\"2\")", '<a href="https://x.y/?a=1&amp;b=&quot;2&quot;">q</a>'],
      ["[**bold** link](https://x.y)", '<a href="https://x.y"><b>bold</b> link</a>'],
      ["**[inside bold](https://x.y)**", '<b><a href="https://x.y">inside bold</a></b>'],
      ["[`code`](https://x.y)", '<a href="https://x.y">code</a>'],
      ["[](https://x.y)", '<a href="https://x.y">https://x.y</a>'],
      ["![diagram](https://x.y/d.png)", '<a href="https://x.y/d.png">diagram</a>'],
      ["<https://x.y/a_b_c>", '<a href="https://x.y/a_b_c">https://x.y/a_b_c</a>'],
    ])("%j → %j", (markdown, html) => {
      expect(render(markdown)).toBe(html);
    });

    it.each([
      "[x](javascript:alert(1))",
      "[x](data:text/html,<b>)",
      "[x](ftp://files)",
      "[x](/relative/path)",
      "[x](www.example.com)",
      "[x](https://a.b c)",
      "[unclosed](https://x.y",
      "[no target]",
      "<javascript:alert(1)>",
    ])("leaves %j as text", (markdown) => {
      expect(render(markdown)).toBe(escapeHtml(markdown));
    });

    it("still formats the text around a rejected link", () => {
      expect(render("[**x**](javascript:void)")).toBe("[<b>x</b>](javascript:void)");
    });

    it("leaves bare URLs as text for Telegram to link, with their underscores and stars intact", () => {
      expect(render("see https://x.y/_a_/b*c*d and http://x.y/__init__.py")).toBe(
        "see https://x.y/_a_/b*c*d and http://x.y/__init__.py",
      );
    });

    it("keeps sentence punctuation and closing markers out of a bare URL", () => {
      expect(render("**https://x.y/path**, (https://x.y/a_b).")).toBe("<b>https://x.y/path</b>, (https://x.y/a_b).");
    });

    it("does not nest links: the outer one wins and the inner one stays text", () => {
      expect(render("[a [b](https://inner) c](https://outer)")).toBe('<a href="https://outer">a [b](https://inner) c</a>');
    });
  });

  describe("blocks", () => {
    it.each([
      ["# Title", "<b>Title</b>"],
      ["### Deep title ###", "<b>Deep title</b>"],
      ["## C#", "<b>C#</b>"],
      ["#hashtag stays", "#hashtag stays"],
      ["#", ""],
    ])("heading %j → %j", (markdown, html) => {
      expect(render(markdown)).toBe(html);
    });

    it("turns bullets into • and keeps numbered lists", () => {
      expect(render("- one\n* two\n+ three\n  - nested *it*\n1. first\n2) second\n10. tenth")).toBe(
        "• one\n• two\n• three\n  • nested <i>it</i>\n1. first\n2) second\n10. tenth",
      );
    });

    it("renders task lists", () => {
      expect(render("- [ ] todo\n- [x] done")).toBe("• ☐ todo\n• ☑ done");
    });

    it("renders a thematic break as a line, not a bullet", () => {
      expect(render("a\n\n---\n\n* * *\nb")).toBe("a\n\n──────────\n\n──────────\nb");
    });

    it("renders blockquotes with inline formatting and flattens nested quotes", () => {
      expect(render("> quote **b**\n> > nested\n> - item\nafter")).toBe(
        "<blockquote>quote <b>b</b>\nnested\n• item</blockquote>\nafter",
      );
    });

    it("keeps code inside a blockquote as plain text, since Telegram allows no pre there", () => {
      expect(render("> ```js\n> a < b\n> ```")).toBe("<blockquote>a &lt; b</blockquote>");
    });

    it("separates consecutive quotes split by a blank line", () => {
      expect(render("> a\n\n> b")).toBe("<blockquote>a</blockquote>\n\n<blockquote>b</blockquote>");
    });

    it("drops an empty quote", () => {
      expect(render(">\n> \ntext")).toBe("text");
    });

    it("keeps paragraphs and line breaks, trimming blank lines at the ends", () => {
      expect(render("\n\nfirst line\nsecond line  \n\n\nnext paragraph\n\n")).toBe("first line\nsecond line\n\n\nnext paragraph");
    });

    it("does not let emphasis cross a block boundary", () => {
      expect(render("- **a\n- b**")).toBe("• **a\n• b**");
    });

    it("normalizes CRLF", () => {
      expect(render("**a**\r\n- b\r\n```\r\nc\r\n```")).toBe("<b>a</b>\n• b\n<pre>c</pre>");
    });
  });

  describe("escaping", () => {
    it.each([
      ["<script>alert('x')</script>", "&lt;script&gt;alert('x')&lt;/script&gt;"],
      ["a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"],
      ["&amp; stays literal", "&amp;amp; stays literal"],
      ["<b>not a tag</b>", "&lt;b&gt;not a tag&lt;/b&gt;"],
      ['quotes " and \' are fine in text', 'quotes " and \' are fine in text'],
    ])("%j → %j", (markdown, html) => {
      expect(render(markdown)).toBe(html);
    });
  });

  describe("always well-formed", () => {
    it.each([
      "**unclosed",
      "*a `*` b*",
      "`**`**",
      "**a `b** c`",
      "<script>**x**</script>",
      "a < b && c > d",
      "[**a](https://x.y)**",
      "**[a**](https://x.y)",
      "~~**a~~**",
      "***a**b*c***",
      "*_*_*_*_",
      "_*_*_*_*",
      "[[[[[[[[[[",
      "]]]]]]((((",
      "![![![](https://x)](https://y)](https://z)",
      "> ```\n> **x\n```\n**",
      "```\n<b>\n",
      "# **\n- __\n> ~~\n1. `",
      "\\",
      "**\\**",
      '[x](https://a.b/"onmouseover="alert(1))',
      "*".repeat(500),
      "_a".repeat(300),
      "**a ".repeat(200),
      "[".repeat(300) + "](https://x)".repeat(300),
    ])("%j", (markdown) => {
      expectValid(render(markdown), markdown);
    });

    it("over thousands of random inputs", () => {
      const random = mulberry32(0x5eed);
      for (let i = 0; i < 3000; i++) {
        const markdown = fuzzInput(random, 1 + Math.floor(random() * 40));
        expectValid(render(markdown), markdown);
      }
    });

    it("stays fast on adversarial input", () => {
      const started = performance.now();
      render(`${"*a ".repeat(5000)}${"[".repeat(5000)}${"`".repeat(3000)}${" ``".repeat(2000)}`);
      render("_".repeat(20_000));
      render(`${"**".repeat(10_000)}x`);
      expect(performance.now() - started).toBeLessThan(2000);
    });
  });

  it("renders a typical LLM answer", () => {
    const markdown = [
      "## Summary",
      "",
      "Here is what I found about `parse_mode`:",
      "",
      "1. **HTML** is the most forgiving.",
      "2. *MarkdownV2* needs escaping of `_*[]()~`.",
      "",
      "- See [the docs](https://core.telegram.org/bots/api#formatting-options)",
      "- Avoid raw <tags> & stray symbols",
      "",
      "```ts",
      "await bot.api.sendMessage(chatId, html, { parse_mode: \"HTML\" });",
      "```",
      "",
      "> Tip: keep messages under 4096 characters.",
    ].join("\n");
    expect(render(markdown)).toBe(
      [
        "<b>Summary</b>",
        "",
        "Here is what I found about <code>parse_mode</code>:",
        "",
        "1. <b>HTML</b> is the most forgiving.",
        "2. <i>MarkdownV2</i> needs escaping of <code>_*[]()~</code>.",
        "",
        '• See <a href="https://core.telegram.org/bots/api#formatting-options">the docs</a>',
        "• Avoid raw &lt;tags&gt; &amp; stray symbols",
        "",
        '<pre><code class="language-ts">await bot.api.sendMessage(chatId, html, { parse_mode: "HTML" });</code></pre>',
        "",
        "<blockquote>Tip: keep messages under 4096 characters.</blockquote>",
      ].join("\n"),
    );
  });
});

describe("findTelegramHtmlProblem", () => {
  it.each([
    "<b>a</b>",
    '<a href="https://x.y">a</a>',
    '<pre><code class="language-ts">x</code></pre>',
    "<blockquote><b>a</b> <i>b</i></blockquote>",
    "<b><i>a</i></b> &amp; &lt; &gt; &quot;",
    "<tg-spoiler>s</tg-spoiler>",
  ])("accepts %j", (html) => {
    expect(findTelegramHtmlProblem(html)).toBeUndefined();
  });

  it.each([
    ["<b>a", "unclosed"],
    ["<b><i>a</b></i>", "closes"],
    ["a < b", "unescaped"],
    ["a & b", "unescaped"],
    ["a > b", "unescaped"],
    ["<script>x</script>", "not allowed"],
    ["<b class=\"x\">a</b>", "attributes"],
    ['<a href="javascript:x">a</a>', "bad link"],
    ["<a>a</a>", "bad link"],
    ['<a href="https://x"><a href="https://y">a</a></a>', "inside a link"],
    ["<code><b>a</b></code>", "inside <code>"],
    ["<pre><b>a</b></pre>", "inside <pre>"],
    ["<blockquote><blockquote>a</blockquote></blockquote>", "inside <blockquote>"],
    ["<b><b>a</b></b>", "inside <b>"],
    ['<code class="language-x">a</code>', "outside <pre>"],
  ])("rejects %j", (html, problem) => {
    expect(findTelegramHtmlProblem(html)).toContain(problem);
  });
});
