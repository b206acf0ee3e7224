import type { FastifyInstance, FastifyRequest } from "fastify";
import type { BrowserBundle } from "./browser-assets";

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => ESCAPES[ch]!);

export interface BrowserPageOptions {
  title: string;
  /** Where the page's `app.js` and `app.css` are served (`/chat`). */
  assetsPath: string;
  /** The page's script: its hash versions the asset URLs, so a new build is never a stale cache. */
  bundle: BrowserBundle;
  /** `data-` attributes of the body: what the script needs to know (no inline script may say it). */
  data: Record<string, string>;
  /** Shown without JavaScript. */
  noscript: string;
}

/**
 * The HTML of a page the gateway serves to browsers (the web chat, the console): its
 * stylesheet and its one module script, no inline script or style (the page CSP forbids
 * both), every value escaped.
 */
export function browserPageHtml(o: BrowserPageOptions): string {
  const path = escapeHtml(o.assetsPath);
  const version = encodeURIComponent(o.bundle.etag.replaceAll('"', ""));
  const data = Object.entries(o.data).map(([key, value]) => ` data-${key}="${escapeHtml(value)}"`).join("");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(o.title)}</title>
<link rel="stylesheet" href="${path}/app.css?v=${version}">
<script type="module" src="${path}/app.js?v=${version}"></script>
</head>
<body${data}>
<noscript>${escapeHtml(o.noscript)}</noscript>
</body>
</html>
`;
}

/** `GET <url>`: a bundled script, with its ETag, cached for `maxAgeSeconds`. */
export function serveScript(app: FastifyInstance, url: string, bundle: BrowserBundle, maxAgeSeconds: number): void {
  app.get(url, { schema: { hide: true } }, async (_request, reply) =>
    reply.type("text/javascript; charset=utf-8").header("etag", bundle.etag).header("cache-control", `public, max-age=${maxAgeSeconds}`).send(bundle.code),
  );
}

/** `GET <assetsPath>/app.js` and `GET <assetsPath>/app.css`: a page's script and stylesheet, cached for an hour (their URLs carry the version). */
export function serveBrowserApp(app: FastifyInstance, assetsPath: string, o: { bundle: BrowserBundle; css: string }): void {
  serveScript(app, `${assetsPath}/app.js`, o.bundle, 3600);
  app.get(`${assetsPath}/app.css`, { schema: { hide: true } }, async (_request, reply) => reply.type("text/css; charset=utf-8").header("cache-control", "public, max-age=3600").send(o.css));
}

/**
 * Whether the request's `Origin` names the host it was sent to, whatever the scheme (behind
 * a proxy that ends TLS the gateway sees http where the browser saw https). False without an
 * Origin or with one that is not a URL.
 */
export function originIsOwnHost(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host === request.host;
  } catch {
    return false;
  }
}
