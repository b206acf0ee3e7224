const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => ESCAPES[ch]!);

/**
 * The chat page: no inline script or style (the Content-Security-Policy forbids both);
 * what the script needs comes in `data-` attributes.
 */
export function chatPageHtml(o: { title: string; path: string; etag: string }): string {
  const title = escapeHtml(o.title);
  const path = escapeHtml(o.path);
  const version = encodeURIComponent(o.etag.replaceAll('"', ""));
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="stylesheet" href="${path}/app.css?v=${version}">
<script type="module" src="${path}/app.js?v=${version}"></script>
</head>
<body data-socket="${path}/ws" data-title="${title}">
<noscript>This chat needs JavaScript.</noscript>
</body>
</html>
`;
}
