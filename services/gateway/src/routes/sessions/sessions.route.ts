import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { HistoryQuery, HistoryView, IdParam, NahidaError, SessionList, SessionListQuery, SessionView, historyPageView } from "@nahida/contracts";
import type { CompactionRepository, SessionRepository, TurnRepository } from "@nahida/db";
import { readErrorResponses } from "../error-responses";
import { sessionView } from "../views";

export const sessionRoutes: FastifyPluginAsyncZod<{ sessions: SessionRepository; turns: TurnRepository; compactions: CompactionRepository }> = async (app, { sessions, turns, compactions }) => {

  app.get(
    "/api/sessions",
    {
      config: { scope: "read", rateLimit: {} },
      schema: { operationId: "listSessions", summary: "List sessions, most recently active first", tags: ["sessions"], querystring: SessionListQuery, response: { 200: SessionList, ...readErrorResponses } },
    },
    async (request) => {
      const q = request.query;
      const page = await sessions.list({
        limit: q.limit,
        offset: q.offset,
        ...(q.channel ? { channel: q.channel } : {}),
        ...(q.active_since ? { activeSince: new Date(q.active_since) } : {}),
        ...(q.status ? { status: q.status } : {}),
        ...(q.chat ? { chatContains: q.chat } : {}),
      });
      return { sessions: page.sessions.map(sessionView), total: page.total, limit: q.limit, offset: q.offset };
    },
  );

  app.get(
    "/api/sessions/:id",
    {
      config: { scope: "read", rateLimit: {} },
      schema: { operationId: "getSession", summary: "One session", tags: ["sessions"], params: IdParam, response: { 200: SessionView, ...readErrorResponses } },
    },
    async (request) => {
      const session = await sessions.get(request.params.id);
      if (!session) throw new NahidaError("not_found", `session ${request.params.id} does not exist`);
      return sessionView(session);
    },
  );

  app.get(
    "/api/sessions/:id/history",
    {
      config: { scope: "read", rateLimit: {} },
      schema: {
        operationId: "getSessionHistory", summary: "A session's history, filtered",
        description:
          "Newest page first (offset 0 is the latest `limit` messages), each page oldest first. Content is cut to 2000 characters; base64, temporary URLs, reasoning, raw platform events and tool arguments are removed.",
        tags: ["sessions"],
        params: IdParam,
        querystring: HistoryQuery,
        response: { 200: HistoryView, ...readErrorResponses },
      },
    },
    async (request) => {
      const session = await sessions.get(request.params.id);
      if (!session) throw new NahidaError("not_found", `session ${request.params.id} does not exist`);
      const [page, compaction] = await Promise.all([turns.page(session.id, request.query.limit, request.query.offset), compactions.forHistory(session.id)]);
      return historyPageView(page, request.query.offset, compaction);
    },
  );
};
