import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { SendPolicy } from "@nahida/contracts";
import type { PolicyRepository } from "@nahida/db";
import { readErrorResponses, writeErrorResponses } from "../error-responses";

/** The send policy document, for admin tokens only: it decides what agents may send where. */
export const policyRoutes: FastifyPluginAsyncZod<{ policies: PolicyRepository }> = async (app, { policies }) => {
  app.get(
    "/api/policy/send",
    {
      config: { scope: "admin", rateLimit: {} },
      schema: {
        operationId: "getSendPolicy", summary: "The send policy",
        description: "What agents may send to other chats and sessions; `{default: \"allow\", rules: []}` until one is stored.",
        tags: ["policy"],
        response: { 200: SendPolicy, ...readErrorResponses },
      },
    },
    async () => policies.sendPolicy(),
  );

  app.put(
    "/api/policy/send",
    {
      config: { scope: "admin", rateLimit: {} },
      schema: {
        operationId: "putSendPolicy", summary: "Replace the send policy",
        description:
          "Replaces the whole document. The first rule whose fields (channel, chat_type, session_prefix) all match a target decides, else `default`; a chat's `/send on|off` override wins over both. A malformed rule is 400 naming it.",
        tags: ["policy"],
        body: SendPolicy,
        response: { 200: SendPolicy, ...writeErrorResponses },
      },
    },
    async (request) => {
      await policies.putSendPolicy(request.body);
      return request.body;
    },
  );
};
