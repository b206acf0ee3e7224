import { timingSafeEqual } from "node:crypto";
import fp from "fastify-plugin";
import type { FastifyRequest } from "fastify";
import { NahidaError, type TokenScope } from "@nahida/contracts";
import { hashToken } from "@nahida/db";
import { checkCsrf, type BrowserSession } from "./browser-sessions";
import type { TokenCache } from "./token-cache";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The scope a route needs; routes without one are public (health, docs). */
    scope?: TokenScope;
  }
  interface FastifyRequest {
    /** The authenticated token, on routes with a scope. */
    token: { id: string; name: string; scopes: string[] } | null;
  }
}

export interface AuthOptions {
  tokens: TokenCache;
}

const BEARER = /^Bearer\s+([A-Za-z0-9._~+/=-]{1,512})$/;

/** The secret of an `Authorization: Bearer <token>` header, or null when there is none or it is malformed. */
export function bearerSecret(header: string | string[] | undefined): string | null {
  const match = typeof header === "string" ? BEARER.exec(header) : null;
  return match ? match[1]! : null;
}

export type AuthenticatedToken = NonNullable<FastifyRequest["token"]>;

/**
 * The token with this sha256, if it exists, is not revoked and has `scope` (or admin; any
 * scope for `null`); a NahidaError (`unauthorized`, `forbidden`) otherwise. Hashes are compared in constant time.
 */
export async function authorizeTokenHash(tokens: TokenCache, presented: string, scope: TokenScope | null): Promise<AuthenticatedToken> {
  const token = await tokens.lookup(presented);
  if (!token || !timingSafeEqual(Buffer.from(token.tokenHash, "hex"), Buffer.from(presented, "hex")) || token.revokedAt) {
    throw new NahidaError("unauthorized", "invalid or revoked token");
  }
  if (scope !== null && !token.scopes.includes("admin") && !token.scopes.includes(scope)) {
    throw new NahidaError("forbidden", `this token lacks the ${scope} scope`);
  }
  tokens.used(token);
  return { id: token.id, name: token.name, scopes: token.scopes };
}

/**
 * Token auth for every route that declares `config.scope`: `Authorization: Bearer <token>`
 * (scripts), or a browser's sign-in cookie with its CSRF token on changes (the console;
 * BrowserSessions). Tokens are looked up by their sha256 and the hashes compared in
 * constant time. With no token configured at all nothing authenticates: the API is never
 * open by default. Lookups go through a short cache (TokenCache), so revocation takes
 * effect within its TTL on every replica, for a signed-in browser too.
 */
export const authPlugin = fp<AuthOptions>(async (app, options) => {
  app.decorateRequest("token", null);
  app.addHook("onRequest", async (request) => {
    const scope = request.routeOptions.config?.scope;
    if (!scope) return;
    const token = await authenticate(request, options.tokens, scope);
    if (!token) throw new NahidaError("unauthorized", "missing or malformed Authorization: Bearer <token>");
    request.token = token;
  });
});

/**
 * The token behind a request: its bearer header, else its browser's sign-in, whose changes
 * `csrf` checks (the session's token in a header, by default); `null` scope takes any.
 * Null when the request presents neither.
 */
export async function authenticate(
  request: FastifyRequest,
  tokens: TokenCache,
  scope: TokenScope | null,
  csrf: (request: FastifyRequest, session: BrowserSession) => void = checkCsrf,
): Promise<AuthenticatedToken | null> {
  const secret = bearerSecret(request.headers.authorization);
  if (secret) return authorizeTokenHash(tokens, hashToken(secret), scope);
  const session = await request.server.browserSessions.of(request);
  if (!session) return null;
  csrf(request, session);
  return authorizeTokenHash(tokens, session.tokenHash, scope);
}
