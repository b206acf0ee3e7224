import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyPluginAsync } from "fastify";
import { browserBundle, browserPageHtml, registerPageSecurity, serveBrowserApp } from "@nahida/http";

export const CONSOLE_PATH = "/console";

const asset = (file: string) => fileURLToPath(new URL(`./browser/${file}`, import.meta.url));
const CONSOLE_CSS = readFileSync(asset("console.css"), "utf8");

/**
 * The operators' console: one page and its script, which does everything through the
 * documented REST API with the browser's sign-in (`/api/auth/session`). Never framed.
 */
export const consoleRoutes: FastifyPluginAsync<{ queueDashboard: boolean }> = async (app, o) => {
  const bundle = await browserBundle(asset("console.app.ts"));
  const page = browserPageHtml({
    title: "Nahida console",
    assetsPath: CONSOLE_PATH,
    bundle,
    data: { "queue-dashboard": o.queueDashboard ? "/admin/queues" : "" },
    noscript: "The console needs JavaScript.",
  });
  await registerPageSecurity(app, { frameAncestors: "none" });
  app.get(CONSOLE_PATH, { schema: { hide: true } }, async (_request, reply) => reply.type("text/html; charset=utf-8").header("cache-control", "no-store").send(page));
  serveBrowserApp(app, CONSOLE_PATH, { bundle, css: CONSOLE_CSS });
};
