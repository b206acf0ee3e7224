/**
 * A strict checker for the Telegram HTML this service produces. It accepts only what
 * `markdownToTelegramHtml` may emit and what Telegram parses without complaint, so tests
 * can assert well-formedness over many inputs, and a sender can refuse to send HTML that
 * would bounce.
 */

const TOKEN = /<(\/?)([^\s>/]*)([^>]*)>|&(?:amp|lt|gt|quot|#\d{1,7}|#x[0-9a-f]{1,6});|[<>&]/gi;
const STYLE_TAGS = new Set(["b", "i", "u", "s", "tg-spoiler"]);
const ALLOWED_TAGS = new Set([...STYLE_TAGS, "a", "code", "pre", "blockquote"]);
const HREF = /^\s+href="((?:https?:\/\/|tg:\/\/|mailto:)[^"<>]*)"\s*$/i;
const CODE_CLASS = /^\s+class="language-[\w#+.-]+"\s*$/;

/**
 * Returns the first problem found in `html`, or undefined when it is well-formed Telegram
 * HTML: only b, i, u, s, tg-spoiler, a href, code, pre, pre > code class="language-x" and
 * blockquote; every tag closed in order; `&`, `<`, `>` escaped outside tags; nothing inside
 * code or pre but pre's one code child; no link, code or pre inside a link; no blockquote or
 * pre inside a blockquote; no style inside the same style.
 */
export function findTelegramHtmlProblem(html: string): string | undefined {
  const stack: string[] = [];
  for (const match of html.matchAll(TOKEN)) {
    const [token, slash, rawName = "", attributes = ""] = match;
    const at = `at ${match.index}`;
    if (token === "<" || token === ">" || token === "&") return `unescaped ${JSON.stringify(token)} ${at}`;
    if (token.startsWith("&")) continue;
    const name = rawName.toLowerCase();
    if (!ALLOWED_TAGS.has(name)) return `tag <${rawName}> is not allowed ${at}`;
    const parent = stack.at(-1);

    if (slash === "/") {
      if (attributes.trim() !== "") return `closing tag </${name}> has attributes ${at}`;
      if (parent !== name) return `</${name}> closes <${parent ?? "nothing"}> ${at}`;
      stack.pop();
      continue;
    }

    if (parent === "code") return `<${name}> inside <code> ${at}`;
    if (parent === "pre" && name !== "code") return `<${name}> inside <pre> ${at}`;
    if (name === "code" && parent === "pre" && attributes !== "" && !CODE_CLASS.test(attributes)) {
      return `bad code class ${JSON.stringify(attributes)} ${at}`;
    }
    if (name === "code" && parent !== "pre" && attributes !== "") return `<code> outside <pre> has attributes ${at}`;
    if (name === "a" && !HREF.test(attributes)) return `bad link attributes ${JSON.stringify(attributes)} ${at}`;
    if (name !== "a" && name !== "code" && attributes !== "") return `<${name}> has attributes ${at}`;
    if (stack.includes("a") && (name === "a" || name === "code" || name === "pre")) return `<${name}> inside a link ${at}`;
    if (stack.includes("blockquote") && (name === "blockquote" || name === "pre")) return `<${name}> inside <blockquote> ${at}`;
    if (STYLE_TAGS.has(name) && stack.includes(name)) return `<${name}> inside <${name}> ${at}`;
    stack.push(name);
  }
  if (stack.length > 0) return `unclosed <${stack.join("> <")}>`;
  return undefined;
}
