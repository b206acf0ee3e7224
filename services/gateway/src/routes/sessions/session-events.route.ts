import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { IdParam, NahidaError, SessionEventAccepted, SessionEventList, SessionEventParams, SessionEventRequest, SessionEventView } from "@nahida/contracts";
import { newRowId, type SessionEventRepository } from "@nahida/db";
import type { SessionEvents } from "@nahida/outbox";
import { readErrorResponses, writeErrorResponses } from "../error-responses";
import { sessionEventView } from "../views";

export interface SessionEventRouteOptions {
  /** Writes the event (and its lane item) in one transaction and wakes the lane. */
  sessionEvents: Pick<SessionEvents, "send">;
  events: SessionEventRepository;
}

/**
 * The operator's `sessions_send`: an event into a session, and where it stands. Sending
 * needs the `send` scope, following an event `read` (admin has both).
 */
export const sessionEventRoutes: FastifyPluginAsyncZod<SessionEventRouteOptions> = async (app, { sessionEvents, events }) => {
  app.post(
    "/api/sessions/:id/events",
    {
      config: { scope: "send", rateLimit: {} },
      schema: {
        operationId: "sendSessionEvent", summary: "Send an event into a session",
        description:
          "Stored as an event (role `event`, source `api:<token id>`), never as a user message. `record_only` writes it into the history for the session's next turn (202 `recorded`); `enqueue` also puts it into the session's lane, which runs a turn (202 `queued`). The run id appears on the event once a run takes it. An unknown session is 404.",
        tags: ["sessions"],
        params: IdParam,
        body: SessionEventRequest,
        response: { 202: SessionEventAccepted, ...writeErrorResponses },
      },
    },
    async (request, reply) => {
      if (!request.token) throw new NahidaError("unauthorized", "authentication required");
      const { message, mode } = request.body;
      const id = newRowId();
      const sent = await sessionEvents.send({
        id,
        sessionId: request.params.id,
        source: `api:${request.token.id}`,
        fromSessionId: null,
        content: message,
        mode,
        // An operator's event starts a chain: what the target's run sends on counts from here.
        depth: 1,
      });
      if (!sent.ok) throw new NahidaError(sent.error.code, sent.error.message);
      return reply.status(202).send({ event_id: id, status: mode === "record_only" ? "recorded" : "queued" });
    },
  );

  app.get(
    "/api/sessions/:id/events",
    {
      config: { scope: "read", rateLimit: {} },
      schema: {
        operationId: "listSessionEvents", summary: "A session's newest events",
        description: "The 100 newest events sent to the session (by other sessions' agents and by operators), newest first, each with where it stands.",
        tags: ["sessions"],
        params: IdParam,
        response: { 200: SessionEventList, ...readErrorResponses },
      },
    },
    async (request) => ({ events: (await events.forSession(request.params.id, 100)).map(sessionEventView) }),
  );

  app.get(
    "/api/sessions/:id/events/:event_id",
    {
      config: { scope: "read", rateLimit: {} },
      schema: {
        operationId: "getSessionEvent", summary: "Where a session event stands",
        description:
          "`recorded`, `queued`, `running`, `done` (with the reply, when the run gave one) or `failed` (with the error). A slow run stays `queued` or `running`; it is never reported as lost. 404 when the event does not exist or belongs to another session.",
        tags: ["sessions"],
        params: SessionEventParams,
        response: { 200: SessionEventView, ...readErrorResponses },
      },
    },
    async (request) => {
      const state = await events.state(request.params.event_id);
      // Another session's event is answered as absent: the path names both.
      if (!state || state.event.sessionId !== request.params.id) {
        throw new NahidaError("not_found", `event ${request.params.event_id} does not exist in session ${request.params.id}`);
      }
      return sessionEventView(state);
    },
  );
};
