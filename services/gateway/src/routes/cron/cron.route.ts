import { z } from "zod";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import {
  CronCreateRequest,
  CronJobView,
  CronList,
  CronListQuery,
  CronRunAccepted,
  CronRunList,
  CronUpdateRequest,
  HistoryQuery,
  IdParam,
  NahidaError,
  type Result,
} from "@nahida/contracts";
import type { CronJobError, CronJobs } from "@nahida/cron";
import type { CronRepository } from "@nahida/db";
import { readErrorResponses, writeErrorResponses } from "../error-responses";
import { cronJobView, cronRunView } from "../views";

export interface CronRouteOptions {
  cron: CronRepository;
  cronJobs: CronJobs;
}

function unwrap<T>(result: Result<T, CronJobError>): T {
  if (!result.ok) throw new NahidaError(result.error.code, result.error.message);
  return result.value;
}

/** Cron jobs over REST: writes need the `cron` scope, reads `read` (admin has both). */
export const cronRoutes: FastifyPluginAsyncZod<CronRouteOptions> = async (app, { cron, cronJobs }) => {
  const getJob = async (id: string) => {
    const job = await cron.get(id);
    if (!job) throw new NahidaError("not_found", `cron job ${id} does not exist`);
    return job;
  };

  app.post(
    "/api/cron",
    {
      config: { scope: "cron", rateLimit: {} },
      schema: {
        operationId: "createCronJob", summary: "Create a cron job",
        description: "Schedules a notification or an agent turn for a typed target. Bad expressions, unknown time zones, an `at` in the past, intervals below the minimum and untyped targets are 400 naming the problem; a target over its quota is 409.",
        tags: ["cron"],
        body: CronCreateRequest,
        response: { 201: CronJobView, ...writeErrorResponses },
      },
    },
    async (request, reply) => {
      if (!request.token) throw new NahidaError("unauthorized", "authentication required");
      const job = unwrap(await cronJobs.create(request.body, `token:${request.token.id}`));
      return reply.status(201).send(cronJobView(job, null));
    },
  );

  app.get(
    "/api/cron",
    {
      config: { scope: "read", rateLimit: {} },
      schema: { operationId: "listCronJobs", summary: "List cron jobs", tags: ["cron"], querystring: CronListQuery, response: { 200: CronList, ...readErrorResponses } },
    },
    async (request) => {
      const q = request.query;
      const page = await cron.list({ limit: q.limit, offset: q.offset, ...(q.target ? { target: q.target } : {}), ...(q.enabled !== undefined ? { enabled: q.enabled } : {}) });
      const last = await cron.lastRuns(page.jobs.map((j) => j.id));
      return { jobs: page.jobs.map((j) => cronJobView(j, last.get(j.id) ?? null)), total: page.total, limit: q.limit, offset: q.offset };
    },
  );

  app.get(
    "/api/cron/:id",
    {
      config: { scope: "read", rateLimit: {} },
      schema: { operationId: "getCronJob", summary: "One cron job, with its next run and its last run", tags: ["cron"], params: IdParam, response: { 200: CronJobView, ...readErrorResponses } },
    },
    async (request) => {
      const job = await getJob(request.params.id);
      const last = await cron.lastRuns([job.id]);
      return cronJobView(job, last.get(job.id) ?? null);
    },
  );

  app.patch(
    "/api/cron/:id",
    {
      config: { scope: "cron", rateLimit: {} },
      schema: {
        operationId: "updateCronJob", summary: "Change a cron job",
        description: "A new schedule counts from now: the old timing never fires again. Re-enabling a job does not fire the slots it slept through.",
        tags: ["cron"],
        params: IdParam,
        body: CronUpdateRequest,
        response: { 200: CronJobView, ...writeErrorResponses },
      },
    },
    async (request) => cronJobView(unwrap(await cronJobs.update(request.params.id, request.body))),
  );

  app.delete(
    "/api/cron/:id",
    {
      config: { scope: "cron", rateLimit: {} },
      schema: { operationId: "deleteCronJob", summary: "Delete a cron job and its run history", tags: ["cron"], params: IdParam, response: { 204: z.null(), ...writeErrorResponses } },
    },
    async (request, reply) => {
      unwrap(await cronJobs.delete(request.params.id));
      return reply.status(204).send(null);
    },
  );

  app.post(
    "/api/cron/:id/run",
    {
      config: { scope: "cron", rateLimit: {} },
      schema: {
        operationId: "runCronJob", summary: "Fire a cron job now",
        description: "A manual run: a scheduler carries it out within a poll; the schedule does not move.",
        tags: ["cron"],
        params: IdParam,
        response: { 202: CronRunAccepted, ...writeErrorResponses },
      },
    },
    async (request, reply) => {
      const { runId } = unwrap(await cronJobs.runNow(request.params.id));
      return reply.status(202).send({ run_id: runId, status: "claimed" as const });
    },
  );

  app.get(
    "/api/cron/:id/runs",
    {
      config: { scope: "read", rateLimit: {} },
      schema: { operationId: "listCronRuns", summary: "Runs of a cron job, newest slot first", tags: ["cron"], params: IdParam, querystring: HistoryQuery, response: { 200: CronRunList, ...readErrorResponses } },
    },
    async (request) => {
      await getJob(request.params.id);
      const page = await cron.listRuns(request.params.id, request.query);
      return { runs: page.runs.map(cronRunView), total: page.total, limit: request.query.limit, offset: request.query.offset };
    },
  );
};
