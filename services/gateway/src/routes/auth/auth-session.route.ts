import { z } from "zod";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { NahidaError, SignInRequest, SignInView, TokenScope } from "@nahida/contracts";
import { hashToken } from "@nahida/db";
import { reachedOverHttps } from "@nahida/http";
import { authorizeTokenHash } from "../../plugins/auth";
import { checkCsrf } from "../../plugins/browser-sessions";
import type { TokenCache } from "../../plugins/token-cache";
import { readErrorResponses } from "../error-responses";

const scopesOf = (scopes: string[]) => scopes.filter((s): s is TokenScope => TokenScope.safeParse(s).success);

/**
 * Browsers sign in here (the console, the queue dashboard): the token is exchanged for an
 * `HttpOnly`, `SameSite=Strict`, signed cookie; its scopes decide what the browser may do,
 * as they would for the token itself.
 */
export const authSessionRoutes: FastifyPluginAsyncZod<{ tokens: TokenCache }> = async (app, { tokens }) => {
  app.post(
    "/api/auth/session",
    {
      config: { rateLimit: {} },
      schema: {
        operationId: "signIn",
        summary: "Sign a browser in with an API token",
        description: "Sets the `nahida_session` cookie (HttpOnly, SameSite=Strict, signed; 8 hours). Changes made with the cookie must carry the returned `csrf_token` as `X-CSRF-Token`.",
        tags: ["auth"],
        security: [],
        body: SignInRequest,
        response: { 201: SignInView, ...readErrorResponses },
      },
    },
    async (request, reply) => {
      const tokenHash = hashToken(request.body.token);
      const token = await authorizeTokenHash(tokens, tokenHash, null);
      const session = await app.browserSessions.start(request, reply, tokenHash, reachedOverHttps(request));
      return reply.status(201).send({ token: { ...token, scopes: scopesOf(token.scopes) }, csrf_token: session.csrfToken, expires_at: session.expiresAt });
    },
  );

  app.get(
    "/api/auth/session",
    {
      config: { rateLimit: {} },
      schema: { operationId: "getSignIn", summary: "This browser's sign-in", tags: ["auth"], security: [], response: { 200: SignInView, ...readErrorResponses } },
    },
    async (request) => {
      const session = await app.browserSessions.of(request);
      if (!session) throw new NahidaError("unauthorized", "this browser is not signed in");
      const token = await authorizeTokenHash(tokens, session.tokenHash, null);
      return { token: { ...token, scopes: scopesOf(token.scopes) }, csrf_token: session.csrfToken, expires_at: session.expiresAt };
    },
  );

  app.delete(
    "/api/auth/session",
    {
      config: { rateLimit: {} },
      schema: { operationId: "signOut", summary: "Sign this browser out", tags: ["auth"], security: [], response: { 204: z.null(), ...readErrorResponses } },
    },
    async (request, reply) => {
      const session = await app.browserSessions.of(request);
      if (session) checkCsrf(request, session);
      await app.browserSessions.end(request, reply);
      return reply.status(204).send(null);
    },
  );
};
