import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyPluginAsync } from "fastify";
import { browserBundle, registerPageSecurity } from "@nahida/http";

export const CONSOLE_PATH = "/console";

const asset = (file: string) => fileURLToPath(new URL(`./browser/${file}`, import.meta.url));
const CONSOLE_CSS = readFileSync(asset("console.css"), "utf8");

/**
 * The operators' console: one page and its script, which does everything through the
 * documented REST API with the browser's sign-in (`/api/auth/session`). Never framed.
 */
export const consoleRoutes: FastifyPluginAsync<{ queueDashboard: boolean }> = async (app, o) => {
  const script = await browserBundle(asset("console.app.ts"));
  const version = encodeURIComponent(script.etag.replaceAll('"', ""));
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Nahida console</title>
<link rel="stylesheet" href="${CONSOLE_PATH}/app.css?v=${version}">
<script type="module" src="${CONSOLE_PATH}/app.js?v=${version}"></script>
</head>
<body data-queue-dashboard="${o.queueDashboard ? "/admin/queues" : ""}">
<noscript>The console needs JavaScript.</noscript>
</body>
</html>
`;
  await registerPageSecurity(app, { frameAncestors: "none" });
  app.get(CONSOLE_PATH, { schema: { hide: true } }, async (_request, reply) => reply.type("text/html; charset=utf-8").header("cache-control", "no-store").send(page));
  app.get(`${CONSOLE_PATH}/app.js`, { schema: { hide: true } }, async (_request, reply) =>
    reply.type("text/javascript; charset=utf-8").header("etag", script.etag).header("cache-control", "public, max-age=3600").send(script.code),
  );
  app.get(`${CONSOLE_PATH}/app.css`, { schema: { hide: true } }, async (_request, reply) => reply.type("text/css; charset=utf-8").header("cache-control", "public, max-age=3600").send(CONSOLE_CSS));
};
