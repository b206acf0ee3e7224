import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { FastifyAdapter } from "@bull-board/fastify";
import type { Queue } from "bullmq";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { NahidaError, httpStatusFor } from "@nahida/contracts";
import { originIsOwnHost } from "@nahida/http";
import { authenticate } from "../../plugins/auth";
import type { TokenCache } from "../../plugins/token-cache";
import { CONSOLE_PATH } from "../console/console.route";

export const QUEUE_DASHBOARD_PATH = "/admin/queues";

export interface QueueDashboardOptions {
  queues: readonly Queue[];
  /** Default true: jobs can be looked at, not retried, promoted, cleaned or removed. */
  readOnly: boolean;
  tokens: TokenCache;
}

function refuse(reply: FastifyReply, error: NahidaError) {
  return reply.status(httpStatusFor(error.code)).send({ error: { code: error.code, message: error.message } });
}

/**
 * A change bull-board's own page makes comes from the gateway's origin; its page cannot
 * send the console's CSRF header, so the Origin header (which a browser always sets on a
 * POST or PUT, and another site cannot forge) stands in for it.
 */
function sameOriginChange(request: FastifyRequest): void {
  if (request.method === "GET" || request.method === "HEAD") return;
  if (!originIsOwnHost(request)) throw new NahidaError("forbidden", "a change from a signed-in browser must come from the dashboard's own page");
}

/**
 * bull-board under `/admin/queues`, for admin tokens only: a request carries
 * `Authorization: Bearer <admin token>`, or the cookie of a browser signed in through the
 * console (`POST /api/auth/session`; the same sign-in, not one of its own). Every request
 * checks the token again, so a revoked one stops working within the token cache time.
 */
export const queueDashboardRoutes: FastifyPluginAsync<QueueDashboardOptions> = async (app, o) => {
  await app.register(async (board) => {
    board.addHook("onRequest", async (request, reply) => {
      try {
        const token = await authenticate(request, o.tokens, "admin", sameOriginChange);
        if (token) return;
        // A browser without a sign-in is sent to the console's; a script gets the API's error.
        if (request.method === "GET" && request.headers.accept?.includes("text/html")) {
          return reply.redirect(`${CONSOLE_PATH}?next=${encodeURIComponent(QUEUE_DASHBOARD_PATH)}`, 303);
        }
        return refuse(reply, new NahidaError("unauthorized", `send Authorization: Bearer <admin token>, or sign in at ${CONSOLE_PATH}`));
      } catch (error) {
        if (!(error instanceof NahidaError)) throw error;
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
