import { createHash, randomBytes } from "node:crypto";
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { FastifyAdapter } from "@bull-board/fastify";
import type { Queue } from "bullmq";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { Redis } from "ioredis";
import { NahidaError, httpStatusFor } from "@nahida/contracts";
import { cookieValue } from "@nahida/http";
import { hashToken } from "@nahida/db";
import { authorizeTokenHash, bearerSecret } from "../../plugins/auth";
import type { TokenCache } from "../../plugins/token-cache";

export const QUEUE_DASHBOARD_PATH = "/admin/queues";
const COOKIE = "nahida_admin";
/** How long a dashboard sign-in lasts; the token itself is checked again on every request. */
export const DASHBOARD_SESSION_SECONDS = 15 * 60;

export interface QueueDashboardOptions {
  queues: readonly Queue[];
  /** Default true: jobs can be looked at, not retried, promoted, cleaned or removed. */
  readOnly: boolean;
  tokens: TokenCache;
  /** Sign-ins are kept here, so every gateway replica knows them. */
  redis: Redis;
  /** The queue prefix, namespacing the sign-ins in Redis (not `prefix`: Fastify takes that as a route prefix). */
  keyPrefix: string;
}

const sha256 = (value: string) => createHash("sha256").update(value).digest("hex");

function refuse(reply: FastifyReply, error: NahidaError) {
  return reply.status(httpStatusFor(error.code)).send({ error: { code: error.code, message: error.message } });
}

const LOGIN_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Nahida queues: sign in</title></head>
<body style="font-family: sans-serif; max-width: 28rem; margin: 4rem auto">
<h1>Nahida queues</h1>
<form method="post" action="${QUEUE_DASHBOARD_PATH}/session">
<p><label>Admin API token<br><input type="password" name="token" autocomplete="off" required style="width: 100%"></label></p>
<p><button type="submit">Sign in for ${DASHBOARD_SESSION_SECONDS / 60} minutes</button></p>
</form></body></html>`;

/**
 * bull-board under `/admin/queues`, for admin tokens only: a request carries
 * `Authorization: Bearer <admin token>`, or the cookie a sign-in gave (a browser cannot
 * send the header when it follows a link). A sign-in stores only the token's hash, under a
 * random session id, in Redis for {@link DASHBOARD_SESSION_SECONDS}; every request checks
 * that token again, so a revoked one stops working within the token cache time. The
 * cookie is HttpOnly and SameSite=Strict, so another site cannot make a browser use it.
 */
export const queueDashboardRoutes: FastifyPluginAsync<QueueDashboardOptions> = async (app, o) => {
  const sessionKey = (sessionId: string) => `${o.keyPrefix}:admin-session:${sha256(sessionId)}`;

  async function adminFrom(request: FastifyRequest): Promise<void> {
    const secret = bearerSecret(request.headers.authorization);
    if (secret) {
      await authorizeTokenHash(o.tokens, hashToken(secret), "admin");
      return;
    }
    const sessionId = cookieValue(request.headers.cookie, COOKIE);
    const tokenHash = sessionId && /^[A-Za-z0-9_-]{43}$/.test(sessionId) ? await o.redis.get(sessionKey(sessionId)) : null;
    if (!tokenHash) throw new NahidaError("unauthorized", `send Authorization: Bearer <admin token>, or sign in at ${QUEUE_DASHBOARD_PATH}/login`);
    await authorizeTokenHash(o.tokens, tokenHash, "admin");
  }

  await app.register(async (login) => {
    login.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit: 4096 }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });
    login.get(`${QUEUE_DASHBOARD_PATH}/login`, { schema: { hide: true } }, async (_request, reply) => reply.type("text/html; charset=utf-8").send(LOGIN_PAGE));
    // The bearer header (scripts) or the login form's field (browsers).
    login.post(`${QUEUE_DASHBOARD_PATH}/session`, { schema: { hide: true } }, async (request, reply) => {
      const fromForm = typeof (request.body as { token?: unknown } | undefined)?.token === "string";
      const secret = bearerSecret(request.headers.authorization) ?? (fromForm ? (request.body as { token: string }).token.trim() : null);
      if (!secret) return refuse(reply, new NahidaError("unauthorized", "send Authorization: Bearer <admin token> or a form field token"));
      const tokenHash = hashToken(secret);
      try {
        await authorizeTokenHash(o.tokens, tokenHash, "admin");
      } catch (error) {
        if (error instanceof NahidaError) return refuse(reply, error);
        throw error;
      }
      const sessionId = randomBytes(32).toString("base64url");
      await o.redis.set(sessionKey(sessionId), tokenHash, "EX", DASHBOARD_SESSION_SECONDS);
      const secure = request.protocol === "https" ? "; Secure" : "";
      reply.header("set-cookie", `${COOKIE}=${sessionId}; Path=${QUEUE_DASHBOARD_PATH}; Max-Age=${DASHBOARD_SESSION_SECONDS}; HttpOnly; SameSite=Strict${secure}`);
      return fromForm ? reply.redirect(QUEUE_DASHBOARD_PATH, 303) : reply.status(204).send();
    });
  });

  await app.register(async (board) => {
    board.addHook("onRequest", async (request, reply) => {
      try {
        await adminFrom(request);
      } catch (error) {
        if (!(error instanceof NahidaError)) throw error;
        // A browser without a sign-in is sent to the form; anything else gets the API's error.
        if (error.code === "unauthorized" && request.method === "GET" && request.headers.accept?.includes("text/html")) {
          return reply.redirect(`${QUEUE_DASHBOARD_PATH}/login`, 303);
        }
        return refuse(reply, error);
      }
    });
    const adapter = new FastifyAdapter();
    adapter.setBasePath(QUEUE_DASHBOARD_PATH);
    createBullBoard({
      queues: o.queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: o.readOnly })),
      serverAdapter: adapter,
      options: { uiConfig: { boardTitle: "Nahida queues" } },
    });
    await board.register(adapter.registerPlugin(), { prefix: QUEUE_DASHBOARD_PATH });
  });
};
