/**
 * The console's one way to make elements: children are nodes or strings, and a string is
 * always a text node, never HTML, so whatever the API returns is shown as text.
 */
export type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string | boolean | undefined> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) element.append(child);
  return element;
}

/** A button that runs `action` once per click, disabled while it runs. */
export function button(label: string, action: () => Promise<void> | void, attrs: Record<string, string> = {}): HTMLButtonElement {
  const b = h("button", { type: "button", ...attrs }, label);
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      await action();
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

/** A table of rows; each cell is a child. */
export function table(headers: string[], rows: Child[][], attrs: Record<string, string> = {}): HTMLTableElement {
  return h(
    "table",
    attrs,
    h("thead", {}, h("tr", {}, ...headers.map((header) => h("th", {}, header)))),
    h("tbody", {}, ...(rows.length > 0 ? rows.map((cells) => h("tr", {}, ...cells.map((cell) => h("td", {}, cell)))) : [h("tr", {}, h("td", { colspan: String(headers.length), class: "empty" }, "Nothing here."))])),
  );
}

/** `2026-12-02 09:14:03` in the browser's time zone. */
export function time(iso: string | null | undefined): string {
  if (!iso) return "–";
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function badge(text: string, tone: "ok" | "warn" | "bad" | "muted" = "muted"): HTMLSpanElement {
  return h("span", { class: `badge ${tone}` }, text);
}

/** An in-page link to a console route. */
export const link = (route: string, label: string) => h("a", { href: `#${route}` }, label);

/** Replaces an element's content. */
export function show(target: HTMLElement, ...children: Child[]): void {
  target.replaceChildren(...children.filter((c): c is Node | string => c !== null && c !== undefined && c !== false));
}
