import { z } from "zod";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { IdParam, NahidaError, TokenCreateRequest, TokenCreated, TokenView } from "@nahida/contracts";
import type { ApiTokenRepository } from "@nahida/db";
import { readErrorResponses } from "../error-responses";
import { tokenView } from "../views";

export interface TokenRoutesOptions {
  tokens: ApiTokenRepository;
  /** Called once a token is revoked, so this replica's cache drops it at once. */
  onRevoked?: (id: string) => void;
}

export const tokenRoutes: FastifyPluginAsyncZod<TokenRoutesOptions> = async (app, options) => {
  app.post(
    "/api/tokens",
    {
      config: { scope: "admin", rateLimit: {} },
      schema: { operationId: "createToken", summary: "Create a token (the secret is shown once)", tags: ["tokens"], body: TokenCreateRequest, response: { 201: TokenCreated, ...readErrorResponses } },
    },
    async (request, reply) => {
      const scopes = [...new Set(request.body.scopes)];
      const { token, secret } = await options.tokens.create(request.body.name, scopes);
      return reply.status(201).send({ ...tokenView(token), token: secret });
    },
  );

  app.get(
    "/api/tokens",
    {
      config: { scope: "admin", rateLimit: {} },
      schema: { operationId: "listTokens", summary: "List tokens (never their secrets)", tags: ["tokens"], response: { 200: z.object({ tokens: z.array(TokenView) }), ...readErrorResponses } },
    },
    async () => ({ tokens: (await options.tokens.list()).map(tokenView) }),
  );

  app.delete(
    "/api/tokens/:id",
    {
      config: { scope: "admin", rateLimit: {} },
      schema: { operationId: "revokeToken", summary: "Revoke a token", tags: ["tokens"], params: IdParam, response: { 200: TokenView, ...readErrorResponses } },
    },
    async (request) => {
      const token = await options.tokens.revoke(request.params.id);
      if (!token) throw new NahidaError("not_found", `token ${request.params.id} does not exist`);
      options.onRevoked?.(token.id);
      return tokenView(token);
    },
  );
};
