import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { IdParam, NahidaError, TaskList, TaskStopped, TaskView, taskView } from "@nahida/contracts";
import type { SessionRepository } from "@nahida/db";
import type { TaskLedger } from "@nahida/tasks";
import { readErrorResponses, writeErrorResponses } from "../error-responses";

export interface TaskRouteOptions {
  /** Reads tasks and ends them (an operator's stop frees the slot and tells the parent). */
  ledger: TaskLedger;
  sessions: SessionRepository;
}

const TaskListQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(200).default(50) });

/**
 * Operators and sub-agents (docs/subagents.md): a session's tasks, one task, and stopping
 * one. A stop by an operator is `cancelled`; the parent is told once, like any end it did
 * not ask for.
 */
export const taskRoutes: FastifyPluginAsyncZod<TaskRouteOptions> = async (app, { ledger, sessions }) => {
  app.get(
    "/api/sessions/:id/tasks",
    {
      config: { scope: "read", rateLimit: {} },
      schema: {
        operationId: "listSessionTasks", summary: "A session's sub-agent tasks",
        description: "Newest first. 404 when the session does not exist.",
        tags: ["tasks"],
        params: IdParam,
        querystring: TaskListQuery,
        response: { 200: TaskList, ...readErrorResponses },
      },
    },
    async (request) => {
      if (!(await sessions.get(request.params.id))) throw new NahidaError("not_found", `session ${request.params.id} does not exist`);
      return { tasks: (await ledger.tasks.listByParent(request.params.id, request.query.limit)).map(taskView) };
    },
  );

  app.get(
    "/api/tasks/:id",
    {
      config: { scope: "read", rateLimit: {} },
      schema: {
        operationId: "getTask", summary: "A sub-agent task",
        description: "Its status (set by the runtime), result or error, who took the result, and its tokens.",
        tags: ["tasks"],
        params: IdParam,
        response: { 200: TaskView, ...readErrorResponses },
      },
    },
    async (request) => {
      const task = await ledger.tasks.get(request.params.id);
      if (!task) throw new NahidaError("not_found", `task ${request.params.id} does not exist`);
      return taskView(task);
    },
  );

  app.post(
    "/api/tasks/:id/stop",
    {
      config: { scope: "send", rateLimit: {} },
      schema: {
        operationId: "stopTask", summary: "Stop a sub-agent task",
        description:
          "Ends a queued or running task as `cancelled`, aborts its run, frees its slot and tells its parent once. A task that already ended is left as it is (`stopped` false, its status).",
        tags: ["tasks"],
        params: IdParam,
        response: { 200: TaskStopped, ...writeErrorResponses },
      },
    },
    async (request) => {
      if (!request.token) throw new NahidaError("unauthorized", "authentication required");
      const ended = await ledger.finish([request.params.id], { status: "cancelled", error: `stopped by an operator (token ${request.token.id})` });
      const task = await ledger.tasks.get(request.params.id);
      if (!task) throw new NahidaError("not_found", `task ${request.params.id} does not exist`);
      return { task_id: task.id, stopped: ended.length === 1, status: task.status };
    },
  );
};
