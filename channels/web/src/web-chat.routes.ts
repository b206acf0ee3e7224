import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { WebSocket } from "ws";
import type { ChannelRouteDeps } from "@nahida/channels";
import type { Clock } from "@nahida/contracts";
import { browserBundle, browserPageHtml, cookieValue, originIsOwnHost, reachedOverHttps, registerPageSecurity, serveBrowserApp, serveScript } from "@nahida/http";
import { WebChatHub } from "./web-chat.bus";
import { serveWebChatSocket } from "./web-chat.socket";
import type { WebEnv } from "./web.env";
import { newAnonymousVisitor, visitorFromCookie, visitorKey } from "./web-visitor";

const asset = (file: string) => fileURLToPath(new URL(`./browser/${file}`, import.meta.url));
const CHAT_CSS = readFileSync(asset("chat.css"), "utf8");
/** An anonymous visitor stays the same for this long without coming back. */
const VISITOR_COOKIE_SECONDS = 365 * 24 * 3600;
/** Sockets that do not answer a ping within this long are closed. */
const HEARTBEAT_MS = 30_000;

/**
 * An anonymous visitor's cookie: sent in a frame on an embedding site only as
 * `SameSite=None`, which browsers take only with `Secure` (HTTPS); partitioned by the
 * embedding site (CHIPS), so it is never a cross-site tracker. The socket's origin check,
 * not SameSite, keeps other sites' pages from using it.
 */
export function visitorCookieAttributes(https: boolean, embedded: boolean): string {
  if (https && embedded) return "SameSite=None; Secure; Partitioned";
  return https ? "SameSite=Lax; Secure" : "SameSite=Lax";
}

export interface WebChatRoutesOptions {
  channel: string;
  config: WebEnv;
  deps: ChannelRouteDeps;
  clock: Clock;
}

/**
 * The web chat on the gateway: the page (`PATH`), its script and style, the embed script
 * (`PATH/embed.js`) and the WebSocket (`PATH/ws`). A socket is accepted from the gateway's
 * own origin or one of `ORIGINS`, never another site's page (it could ride an anonymous
 * visitor's cookie).
 */
export function webChatRoutes(o: WebChatRoutesOptions): FastifyPluginAsync {
  const { config, deps } = o;
  const path = config.PATH;
  const cookieName = `nahida_visitor_${o.channel}`;
  return async (app) => {
    const [chatJs, embedJs] = await Promise.all([browserBundle(asset("chat.app.ts")), browserBundle(asset("embed.app.ts"))]);
    const sockets = new Set<WebSocket>();
    const hub = new WebChatHub(deps.createSubscriber(`webchat-${o.channel}`), deps.prefix, () => {
      for (const socket of sockets) socket.close(1012, "reconnect for what was missed");
    });
    const alive = new WeakSet<WebSocket>();
    const heartbeat = setInterval(() => {
      for (const socket of sockets) {
        if (!alive.has(socket)) socket.terminate();
        else {
          alive.delete(socket);
          socket.ping();
        }
      }
    }, HEARTBEAT_MS);
    app.addHook("onClose", async () => {
      clearInterval(heartbeat);
      for (const socket of sockets) socket.close(1001, "the gateway is stopping");
    });

    // Scripts send no Origin; browsers do. A proxy that rewrites the host needs
    // GATEWAY_TRUST_PROXY, or the public origin in ORIGINS.
    const allowedOrigin = (request: FastifyRequest) => {
      const origin = request.headers.origin;
      return origin === undefined || config.ORIGINS.includes(origin) || originIsOwnHost(request);
    };
    const page = browserPageHtml({ title: config.TITLE, assetsPath: path, bundle: chatJs, data: { socket: `${path}/ws`, title: config.TITLE }, noscript: "This chat needs JavaScript." });

    await registerPageSecurity(app, { frameAncestors: config.ORIGINS, crossOriginResources: true });
    app.get(path, { schema: { hide: true } }, async (request, reply) => {
      if (config.ANONYMOUS && !visitorFromCookie(cookieValue(request.headers.cookie, cookieName), config.SECRET)) {
        const { cookie } = newAnonymousVisitor(config.SECRET);
        reply.header("set-cookie", `${cookieName}=${cookie}; Path=${path}; Max-Age=${VISITOR_COOKIE_SECONDS}; HttpOnly; ${visitorCookieAttributes(reachedOverHttps(request), config.ORIGINS.length > 0)}`);
      }
      return reply.type("text/html; charset=utf-8").header("cache-control", "no-store").send(page);
    });
    serveBrowserApp(app, path, { bundle: chatJs, css: CHAT_CSS });
    // Its URL stays the same on the operators' sites: a short cache, so a new version arrives soon.
    serveScript(app, `${path}/embed.js`, embedJs, 300);
    app.get(`${path}/ws`, {
      websocket: true,
      schema: { hide: true },
      preValidation: async (request, reply) => {
        if (!allowedOrigin(request)) await reply.status(403).send({ error: { code: "forbidden", message: "this origin may not open the chat; see WEB_ORIGINS" } });
      },
    }, (socket, request) => {
      sockets.add(socket);
      alive.add(socket);
      socket.on("pong", () => alive.add(socket));
      socket.on("close", () => sockets.delete(socket));
      const cookieVisitor = config.ANONYMOUS ? visitorFromCookie(cookieValue(request.headers.cookie, cookieName), config.SECRET) : null;
      serveWebChatSocket(socket, cookieVisitor, {
        channel: o.channel,
        config,
        intake: deps.intake,
        redis: deps.redis,
        prefix: deps.prefix,
        hub,
        transcript: deps.transcript,
        clock: o.clock,
        logger: deps.logger,
        senderKey: (visitorId) => visitorKey(config.SECRET, visitorId),
      });
    });
  };
}
