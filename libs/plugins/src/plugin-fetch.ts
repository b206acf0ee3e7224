import { PluginPermissionError } from "@nahida/plugin-sdk";

const MAX_REDIRECTS = 5;

/** Whether `hostname` is one of `allowed`: a host name, or `*.<domain>` for its subdomains. */
export function hostAllowed(allowed: readonly string[], hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, "");
  return allowed.some((pattern) => {
    const p = pattern.toLowerCase();
    return p.startsWith("*.") ? host.endsWith(p.slice(1)) && host.length > p.length - 1 : host === p;
  });
}

/**
 * A `fetch` that reaches only `allowed` hosts over http(s), and follows redirects itself so
 * that a redirect to another host is refused too. Everything else is the platform's fetch.
 */
export function guardedFetch(plugin: string, allowed: readonly string[], base: typeof globalThis.fetch = globalThis.fetch): typeof globalThis.fetch {
  const refuse = (url: URL) =>
    new PluginPermissionError(
      plugin,
      "network",
      allowed.length === 0
        ? `plugin ${plugin} may not reach ${url.host}: its plugin.yaml declares no permissions.network`
        : `plugin ${plugin} may not reach ${url.host}: not in its permissions.network (${allowed.join(", ")})`,
    );
  const check = (url: URL) => {
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new PluginPermissionError(plugin, "network", `plugin ${plugin} may only fetch http(s) URLs, not ${url.protocol}`);
    if (!hostAllowed(allowed, url.hostname)) throw refuse(url);
  };
  return async (input, init) => {
    const first = new Request(input, init);
    let body = first.body === null ? null : await first.arrayBuffer();
    let method = first.method;
    let url = new URL(first.url);
    const headers = new Headers(first.headers);
    for (let hop = 0; ; hop++) {
      check(url);
      const response = await base(url, { method, headers, body, signal: first.signal, redirect: "manual" });
      const location = response.headers.get("location");
      if (response.status < 300 || response.status >= 400 || location === null || first.redirect === "manual") return response;
      if (first.redirect === "error") throw new TypeError(`redirected to ${location}`);
      if (hop >= MAX_REDIRECTS) throw new TypeError(`more than ${MAX_REDIRECTS} redirects`);
      await response.body?.cancel();
      // 303, and 301/302 after a POST, become a GET without a body (the fetch standard).
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
        method = "GET";
        body = null;
      }
      const next = new URL(location, url);
      // As the fetch standard does: credentials never follow a redirect to another origin.
      if (next.origin !== url.origin) for (const name of ["authorization", "cookie", "proxy-authorization"]) headers.delete(name);
      url = next;
    }
  };
}
