/**
 * The tree `parseMarkdown` builds from Markdown as LLMs write it, with no channel's rendering
 * in it: each channel renders it its own way (Telegram HTML, plain text, …).
 *
 * Blocks are line-oriented, as chat answers are: a block starts on its own line, blank lines
 * between blocks are kept as `blankLine` so a renderer can keep the author's spacing, and
 * line breaks inside a paragraph stay as "\n" in its text. Inline text is source text with
 * the Markdown taken out: backslash escapes resolved, unmatched markers kept as literal text.
 */
export interface MarkdownDocument {
  /** Never starts or ends with a `blankLine`. */
  blocks: MarkdownBlock[];
}

export type MarkdownBlock =
  | MarkdownParagraph
  | MarkdownHeading
  | MarkdownCodeBlock
  | MarkdownQuote
  | MarkdownList
  | MarkdownRule
  | MarkdownBlankLine;

/** Consecutive lines of running text; the lines are joined with "\n". */
export interface MarkdownParagraph {
  kind: "paragraph";
  children: MarkdownInline[];
}

/** `# Title` … `###### Title`; the closing `#`s are dropped. `children` is empty for a bare `#`. */
export interface MarkdownHeading {
  kind: "heading";
  level: 1 | 2 | 3 | 4 | 5 | 6;
  children: MarkdownInline[];
}

/** A fenced code block. An unclosed fence runs to the end of its container, as in CommonMark. */
export interface MarkdownCodeBlock {
  kind: "codeBlock";
  /** The info string's first word when it is a plausible language name (`[\w#+.-]{1,40}`). */
  language: string | undefined;
  /** The lines between the fences, the fence's indentation removed; may be empty or blank. */
  code: string;
}

/**
 * `>` lines. Nested quotes are flattened: `> > a` is the line `a` of the outer quote, so a
 * quote never contains a quote. `children` may be empty.
 */
export interface MarkdownQuote {
  kind: "quote";
  /** Never starts or ends with a `blankLine`. */
  children: MarkdownBlock[];
}

/** Consecutive item lines, all bullets or all numbered. */
export interface MarkdownList {
  kind: "list";
  ordered: boolean;
  items: MarkdownListItem[];
}

/** One `- item`, `* item`, `+ item`, `1. item` or `1) item` line. */
export interface MarkdownListItem {
  /** Leading whitespace as written: nesting shows only as indentation. */
  indent: string;
  marker: MarkdownListMarker;
  /** `- [ ] todo` is false, `- [x] done` is true; undefined when the item is not a task. */
  checked: boolean | undefined;
  children: MarkdownInline[];
}

export type MarkdownListMarker =
  | { kind: "bullet" }
  /** `number` as written, leading zeros kept. */
  | { kind: "ordered"; number: string; delimiter: "." | ")" };

/** `---`, `***`, `___` (spaces allowed between the characters). */
export interface MarkdownRule {
  kind: "rule";
}

/** An empty (or whitespace-only) source line between blocks. */
export interface MarkdownBlankLine {
  kind: "blankLine";
}

export type MarkdownInline =
  | MarkdownText
  | MarkdownUrl
  | MarkdownCode
  | MarkdownBold
  | MarkdownItalic
  | MarkdownStrike
  | MarkdownLink
  | MarkdownImage;

/** Adjacent text is always one node: a `text` never follows a `text`. */
export interface MarkdownText {
  kind: "text";
  text: string;
}

/** A bare http(s) URL in running text, trailing sentence punctuation excluded. Markers inside it are not markup. */
export interface MarkdownUrl {
  kind: "url";
  url: string;
}

/** `` `code` ``: the text between the backtick runs, line breaks as spaces, one padding space stripped. */
export interface MarkdownCode {
  kind: "code";
  code: string;
}

/** `**bold**` or `__bold__`. Styles nest but never cross. */
export interface MarkdownBold {
  kind: "bold";
  children: MarkdownInline[];
}

/** `*italic*` or `_italic_` (never inside snake_case words). */
export interface MarkdownItalic {
  kind: "italic";
  children: MarkdownInline[];
}

/** `~~strike~~` (a lone `~` is "about" and stays text). */
export interface MarkdownStrike {
  kind: "strike";
  children: MarkdownInline[];
}

/**
 * `[text](href "title")` or `<href>`. Only http, https, tg and mailto targets make links:
 * anything else (javascript:, data:, relative paths) stays text, so no renderer can emit an
 * unsafe href. `children` never contains a link or an image, and may be empty (`[](href)`).
 */
export interface MarkdownLink {
  kind: "link";
  href: string;
  children: MarkdownInline[];
}

/** `![alt](src)`, with the same rules for `src` as a link's href. */
export interface MarkdownImage {
  kind: "image";
  src: string;
  alt: MarkdownInline[];
}
