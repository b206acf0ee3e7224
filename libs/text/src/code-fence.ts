/** An opening code fence: "```python" is `{ char: "`", length: 3, indent: 0, language: "python" }`. */
export interface CodeFence {
  char: "`" | "~";
  length: number;
  /** Leading spaces of the fence line, stripped from the code lines too. */
  indent: number;
  /** The info string's first word when it is a plausible language name. */
  language: string | undefined;
}

const FENCE_OPEN = /^([ \t]*)(`{3,}|~{3,})(.*)$/;
const FENCE_CLOSE = /^[ \t]*(`{3,}|~{3,})[ \t]*$/;
const LANGUAGE = /^[\w#+.-]{1,40}$/;

/** Recognizes an opening code fence line the way `parseMarkdown` does. */
export function parseFenceOpen(line: string): CodeFence | undefined {
  const match = FENCE_OPEN.exec(line);
  if (match === null) return undefined;
  const [, indent = "", marker = "", info = ""] = match;
  const char = marker[0] === "`" ? "`" : "~";
  // A backtick fence's info string cannot contain backticks: "```js```" is inline code.
  if (char === "`" && info.includes("`")) return undefined;
  const language = info.trim().split(/\s+/)[0] ?? "";
  return { char, length: marker.length, indent: indent.length, language: LANGUAGE.test(language) ? language : undefined };
}

/** True when `line` closes `fence`: the same character, at least as many, nothing else. */
export function isFenceClose(line: string, fence: CodeFence): boolean {
  const marker = FENCE_CLOSE.exec(line)?.[1];
  return marker !== undefined && marker[0] === fence.char && marker.length >= fence.length;
}
