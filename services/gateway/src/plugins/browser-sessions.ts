import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import cookie, { Signer } from "@fastify/cookie";
import fp from "fastify-plugin";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Cluster, Redis } from "ioredis";
import { NahidaError } from "@nahida/contracts";

export const SESSION_COOKIE = "nahida_session";
/** How long a browser's sign-in lasts; its token is checked again on every request. */
export const BROWSER_SESSION_SECONDS = 8 * 3600;
/** The header a signed-in browser sends with every change. */
export const CSRF_HEADER = "x-csrf-token";
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** A browser's sign-in: the token it signed in with (by hash), and its CSRF token. */
export interface BrowserSession {
  tokenHash: string;
  csrfToken: string;
  expiresAt: string;
}

declare module "fastify" {
  interface FastifyInstance {
    browserSessions: BrowserSessions;
  }
}

const sha256 = (value: string) => createHash("sha256").update(value).digest("hex");

/**
 * Sign-ins of browsers (the console, the queue dashboard): one API token exchanged for a
 * cookie. The cookie holds only a random id, signed; the session (the token's hash and a
 * CSRF token) is in Redis under the id's hash, so every gateway replica knows it and a
 * sign-out or expiry ends it everywhere. The cookie is `HttpOnly`, `SameSite=Strict`, and
 * `Secure` over HTTPS.
 */
export class BrowserSessions {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keyPrefix: string,
  ) {}

  private key(sessionId: string): string {
    return `${this.keyPrefix}:browser-session:${sha256(sessionId)}`;
  }

  /** A new sign-in; the browser's previous one, if any, ends (a fresh id every time: no fixation). */
  async start(request: FastifyRequest, reply: FastifyReply, tokenHash: string, secure: boolean): Promise<BrowserSession> {
    const previous = this.sessionId(request);
    if (previous) await this.redis.del(this.key(previous));
    const sessionId = randomBytes(32).toString("base64url");
    const session: BrowserSession = {
      tokenHash,
      csrfToken: randomBytes(32).toString("base64url"),
      expiresAt: new Date(Date.now() + BROWSER_SESSION_SECONDS * 1000).toISOString(),
    };
    await this.redis.set(this.key(sessionId), JSON.stringify(session), "EX", BROWSER_SESSION_SECONDS);
    reply.setCookie(SESSION_COOKIE, sessionId, { signed: true, httpOnly: true, sameSite: "strict", secure, path: "/", maxAge: BROWSER_SESSION_SECONDS });
    return session;
  }

  /** The request's session, when its cookie is signed by this deployment and the session lives. */
  async of(request: FastifyRequest): Promise<BrowserSession | null> {
    const sessionId = this.sessionId(request);
    if (!sessionId) return null;
    const stored = await this.redis.get(this.key(sessionId));
    return stored ? (JSON.parse(stored) as BrowserSession) : null;
  }

  async end(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const sessionId = this.sessionId(request);
    if (sessionId) await this.redis.del(this.key(sessionId));
    reply.clearCookie(SESSION_COOKIE, { path: "/" });
  }

  private sessionId(request: FastifyRequest): string | null {
    const raw = request.cookies[SESSION_COOKIE];
    if (!raw) return null;
    const unsigned = request.unsignCookie(raw);
    return unsigned.valid && unsigned.value && /^[A-Za-z0-9_-]{43}$/.test(unsigned.value) ? unsigned.value : null;
  }
}

/**
 * A change from a signed-in browser must carry the session's CSRF token in `X-CSRF-Token`:
 * another site can make a browser send the cookie (were SameSite ever relaxed), never read
 * the token. Reads need none.
 */
export function checkCsrf(request: FastifyRequest, session: BrowserSession): void {
  if (SAFE_METHODS.has(request.method)) return;
  const sent = request.headers[CSRF_HEADER];
  const ok = typeof sent === "string" && sent.length === session.csrfToken.length && timingSafeEqual(Buffer.from(sent), Buffer.from(session.csrfToken));
  if (!ok) throw new NahidaError("forbidden", `a signed-in browser sends its CSRF token in ${CSRF_HEADER} with every change (GET /api/session has it)`);
}

/** How often a replica without GATEWAY_SESSION_SECRET looks at the shared secret in Redis. */
const SECRET_REFRESH_MS = 30_000;

/**
 * What signs session cookies: `GATEWAY_SESSION_SECRET`, or else one secret kept in Redis for
 * every replica. A Redis that lost it (a restart without persistence) gets the next
 * replica's; each replica looks again every 30 s and takes the one Redis holds, so replicas
 * agree again within that time, and a cookie signed with the secret a replica had before
 * still verifies there (those sign-ins were lost with Redis anyway).
 */
export class CookieSigner {
  private signer: InstanceType<typeof Signer>;
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    private current: string,
    private readonly shared?: { redis: Redis | Cluster; key: string },
  ) {
    this.signer = new Signer([current]);
  }

  static async start(redis: Redis | Cluster, keyPrefix: string, configured?: string): Promise<CookieSigner> {
    if (configured) return new CookieSigner(configured);
    const signer = new CookieSigner("", { redis, key: `${keyPrefix}:browser-session:secret` });
    await signer.refresh();
    signer.timer = setInterval(() => void signer.refresh().catch(() => undefined), SECRET_REFRESH_MS).unref();
    return signer;
  }

  /** The secret Redis holds, set from this replica's own when Redis has none. */
  async refresh(): Promise<void> {
    const { redis, key } = this.shared!;
    await redis.set(key, this.current || randomBytes(32).toString("base64url"), "NX");
    const secret = await redis.get(key);
    if (!secret) throw new Error("the session cookie secret could not be read from Redis");
    if (secret === this.current) return;
    this.signer = new Signer(this.current ? [secret, this.current] : [secret]);
    this.current = secret;
  }

  /** For @fastify/cookie's `secret`. */
  readonly cookieSecret = {
    sign: (value: string) => this.signer.sign(value),
    unsign: (value: string) => this.signer.unsign(value),
  };

  stop(): void {
    clearInterval(this.timer);
  }
}

/** Registers cookie parsing and signing, and `app.browserSessions`, for the whole gateway. */
export const browserSessionsPlugin = fp<{ redis: Redis | Cluster; keyPrefix: string; signer: CookieSigner }>(async (app, o) => {
  await app.register(cookie, { secret: o.signer.cookieSecret });
  app.decorate("browserSessions", new BrowserSessions(o.redis, o.keyPrefix));
});
