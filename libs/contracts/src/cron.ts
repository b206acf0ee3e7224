import { z } from "zod";
import { ApiAttachment, noNul, Paging } from "./api";
import { ChatAddressString } from "./chat-address";

/**
 * When a cron job fires (`cron_jobs.schedule`).
 * - `cron`: a 5-field (minute precision) or 6-field (leading seconds) expression, in `tz`
 *   (IANA name; default the deployment's NAHIDA_TIMEZONE).
 * - `every`: every `every_ms` milliseconds, counted from when the schedule was set.
 * - `at`: once, at an ISO 8601 instant; without an offset it is read in the job's tz.
 */
export const CronSchedule = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("cron"),
    expr: noNul(z.string().trim().min(1).max(200)),
    tz: noNul(z.string().min(1).max(64)).optional(),
  }),
  z.strictObject({ kind: z.literal("every"), every_ms: z.number().int().min(1).max(366 * 86_400_000) }),
  z.strictObject({
    kind: z.literal("at"),
    at: noNul(z.string().min(10).max(40)).describe("ISO 8601; without an offset it is in the job's tz"),
    tz: noNul(z.string().min(1).max(64)).optional(),
  }),
]);
export type CronSchedule = z.infer<typeof CronSchedule>;

/** Which session an agent turn runs in: the target chat's current one, a fresh one per fire, or a named one. */
export const CronSessionMode = z.union([
  z.literal("main"),
  z.literal("isolated"),
  z.string().regex(/^named:[A-Za-z0-9_.-]{1,64}$/, "must be main, isolated or named:<key> (letters, digits, _ . -)"),
]);
export type CronSessionMode = z.infer<typeof CronSessionMode>;

/**
 * What a fire does (`cron_jobs.payload`).
 * - `notify`: sends `text` (and attachments) to the target through the outbox.
 * - `agent_turn`: puts `prompt` into a session's lane as a scheduled event; the answer goes
 *   to the target when `deliver` is true (HEARTBEAT_OK and NO_REPLY send nothing).
 * - `command`: runs a chat command of the deployment (`/weather Berlin`, a plugin's or a
 *   built-in one) in the target chat, with no sender roles and without changing the chat;
 *   its answer goes to the target when `deliver` is true.
 */
export const CronPayload = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("notify"),
    text: noNul(z.string().max(20_000)),
    attachments: z.array(ApiAttachment).max(10).default([]),
  }),
  z.strictObject({
    kind: z.literal("agent_turn"),
    prompt: noNul(z.string().trim().min(1).max(20_000)),
    session: CronSessionMode.default("main"),
    deliver: z.boolean().default(true),
  }),
  z.strictObject({
    kind: z.literal("command"),
    command: noNul(z.string().trim().min(2).max(2_000).regex(/^\/[A-Za-z]/, "must be a chat command such as /weather Berlin")),
    deliver: z.boolean().default(true),
  }),
]);
export type CronPayload = z.infer<typeof CronPayload>;

/** What happens to slots that passed while no scheduler could fire them. */
export const CronMissedPolicy = z.enum(["skip", "run_once"]);
export type CronMissedPolicy = z.infer<typeof CronMissedPolicy>;

/**
 * One (job, slot) in `cron_runs`:
 * - `claimed`: a manual run or a retry waiting for a scheduler to carry it out;
 * - `running`: its effect (a delivery, a lane item) is written; waiting for the outcome;
 * - `retrying`: the effect failed; tried again at `retry_at`;
 * - `succeeded`, `failed`: final;
 * - `skipped`: a passed slot inside the catch-up window that the policy did not fire;
 * - `missed`: a slot older than the catch-up window, never fired late.
 */
export const CronRunStatus = z.enum(["claimed", "running", "retrying", "succeeded", "failed", "skipped", "missed"]);
export type CronRunStatus = z.infer<typeof CronRunStatus>;

/** Default catch-up window: a slot missed by more than this is recorded as missed, never fired. */
export const DEFAULT_CATCHUP_WINDOW_MS = 10 * 60_000;

const jobFields = {
  name: noNul(z.string().trim().min(1).max(100)),
  schedule: CronSchedule,
  target: ChatAddressString.describe("typed chat address <channel>:<type>:<id>[:<thread>]"),
  payload: CronPayload,
  enabled: z.boolean(),
  missed: CronMissedPolicy.describe("what a slot passed while no scheduler ran does inside the catch-up window (default run_once)"),
  catchup_window_ms: z.number().int().min(0).max(7 * 86_400_000).describe("default 600000 (10 min)"),
  max_runs: z.number().int().min(1).max(1_000_000_000).nullable().describe("disable after this many fires"),
  end_at: z.iso.datetime({ offset: true }).nullable().describe("no slot after this instant fires"),
  delete_after_run: z.boolean().describe("delete the job after its last run succeeded (default true for at)"),
  jitter_ms: z.number().int().min(0).max(3_600_000).describe("fire up to this much after the slot, the same delay on every replica"),
};

export const CronCreateRequest = z
  .strictObject({
    name: jobFields.name,
    schedule: jobFields.schedule,
    target: jobFields.target,
    payload: jobFields.payload,
    enabled: jobFields.enabled.default(true),
    missed: jobFields.missed.default("run_once"),
    catchup_window_ms: jobFields.catchup_window_ms.default(DEFAULT_CATCHUP_WINDOW_MS),
    max_runs: jobFields.max_runs.optional(),
    end_at: jobFields.end_at.optional(),
    delete_after_run: jobFields.delete_after_run.optional(),
    jitter_ms: jobFields.jitter_ms.default(0),
  })
  .refine((b) => b.payload.kind !== "notify" || b.payload.text.trim() !== "" || b.payload.attachments.length > 0, {
    message: "a notify payload needs text or attachments",
    path: ["payload", "text"],
  })
  .meta({ id: "CronCreateRequest" });
export type CronCreateRequest = z.infer<typeof CronCreateRequest>;

export const CronUpdateRequest = z
  .strictObject({
    name: jobFields.name.optional(),
    schedule: jobFields.schedule.optional(),
    target: jobFields.target.optional(),
    payload: jobFields.payload.optional(),
    enabled: jobFields.enabled.optional(),
    missed: jobFields.missed.optional(),
    catchup_window_ms: jobFields.catchup_window_ms.optional(),
    max_runs: jobFields.max_runs.optional(),
    end_at: jobFields.end_at.optional(),
    delete_after_run: jobFields.delete_after_run.optional(),
    jitter_ms: jobFields.jitter_ms.optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: "nothing to update" })
  .meta({ id: "CronUpdateRequest" });
export type CronUpdateRequest = z.infer<typeof CronUpdateRequest>;

export const CronRunView = z
  .object({
    id: z.uuid(),
    job_id: z.uuid(),
    slot: z.iso.datetime(),
    status: CronRunStatus,
    manual: z.boolean(),
    attempt: z.number().int(),
    error: z.string().nullable(),
    delivery_ids: z.array(z.uuid()),
    session_id: z.uuid().nullable(),
    created_at: z.iso.datetime(),
    finished_at: z.iso.datetime().nullable(),
  })
  .meta({ id: "CronRun" });
export type CronRunView = z.infer<typeof CronRunView>;

export const CronJobView = z
  .object({
    id: z.uuid(),
    name: z.string(),
    schedule: CronSchedule,
    tz: z.string(),
    target: z.string(),
    payload: CronPayload,
    enabled: z.boolean(),
    missed: CronMissedPolicy,
    catchup_window_ms: z.number().int(),
    max_runs: z.number().int().nullable(),
    end_at: z.iso.datetime().nullable(),
    delete_after_run: z.boolean(),
    jitter_ms: z.number().int(),
    owner: z.string().describe("token:<id> or session:<id>"),
    run_count: z.number().int(),
    consecutive_failures: z.number().int(),
    disabled_reason: z.string().nullable(),
    next_run_at: z.iso.datetime().nullable(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
    last_run: CronRunView.nullable().optional(),
  })
  .meta({ id: "CronJob" });
export type CronJobView = z.infer<typeof CronJobView>;

export const CronListQuery = z.strictObject({
  ...Paging.shape,
  target: ChatAddressString.optional(),
  enabled: z.enum(["true", "false"]).transform((v) => v === "true").optional(),
});

export const CronList = z
  .object({ jobs: z.array(CronJobView), total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .meta({ id: "CronList" });

export const CronRunList = z
  .object({ runs: z.array(CronRunView), total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .meta({ id: "CronRunList" });

export const CronRunAccepted = z.object({ run_id: z.uuid(), status: CronRunStatus }).meta({ id: "CronRunAccepted" });
