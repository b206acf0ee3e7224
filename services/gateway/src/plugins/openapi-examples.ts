import { jsonSchemaTransform } from "fastify-type-provider-zod";
import type { z } from "zod";

/**
 * One example per operation of the OpenAPI document: the request body for a change, the
 * answer for a read. The document's transform checks each against the route's own zod
 * schema, so an example that no longer fits fails the build of the document (and its test)
 * instead of misleading a client's author.
 */
const SESSION = "5b0e7a53-3f7e-4c1f-9a4b-2d8e6f1c9b10";
const DELIVERY = "8d2f4c1a-6b3e-4f5a-9c7d-1e2f3a4b5c6d";
const JOB = "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f";
const RUN = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0";
const TOKEN = "3a9c1e7b-2d4f-4a6c-8e0b-5f7d9c1a3e5b";
const EVENT = "6e5d4c3b-2a19-4807-b6f5-e4d3c2b1a098";
const TASK = "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a";
const RUN_ID = "2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901";
const AT = "2026-12-02T09:00:00.000Z";

const delivery = {
  id: DELIVERY,
  target: "telegram:group:-1001234567890",
  status: "sent",
  attempts: 1,
  platform_message_ids: ["4711"],
  delivery_policy: "at_least_once",
  uncertain: false,
  uncertain_parts: [],
  source: "api",
  created_at: AT,
  sent_at: "2026-12-02T09:00:00.412Z",
};
const session = { id: SESSION, chat_address: "web:private:customer-1842", channel: "web", status: "active", title: null, parent_id: null, created_at: AT, last_activity_at: "2026-12-02T09:14:03.512Z" };
const cronJob = {
  id: JOB,
  name: "Morning report",
  schedule: { kind: "cron", expr: "0 9 * * 1-5" },
  tz: "Europe/Berlin",
  target: "telegram:group:-1001234567890",
  payload: { kind: "notify", text: "Good morning! The report is ready.", attachments: [] },
  enabled: true,
  missed: "run_once",
  catchup_window_ms: 600000,
  max_runs: null,
  end_at: null,
  delete_after_run: false,
  jitter_ms: 0,
  owner: `token:${TOKEN}`,
  run_count: 12,
  consecutive_failures: 0,
  disabled_reason: null,
  next_run_at: "2026-12-03T08:00:00.000Z",
  created_at: AT,
  updated_at: AT,
  last_run: null,
};
const cronRun = { id: RUN, job_id: JOB, slot: AT, status: "succeeded", manual: false, attempt: 1, error: null, delivery_ids: [DELIVERY], session_id: null, created_at: AT, finished_at: "2026-12-02T09:00:00.530Z" };
const token = { id: TOKEN, name: "deploy-script", prefix: "nhd_", scopes: ["send"], created_at: AT, last_used_at: null, revoked_at: null };
const event = { event_id: EVENT, session_id: SESSION, mode: "enqueue", status: "done", source: `api:${TOKEN}`, run_id: RUN_ID, reply: "Noted: the backup finished.", error: null, created_at: AT, finished_at: "2026-12-02T09:00:02.100Z" };
const task = {
  task_id: TASK,
  parent_session_id: SESSION,
  child_session_id: "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d",
  parent_run_id: RUN_ID,
  label: "research",
  task: "Find the three cheapest flights to Lisbon next Friday",
  context: "isolated",
  status: "succeeded",
  result: "1. TAP 08:10 €89 …",
  error: null,
  consumed_by: "wait",
  adopted: true,
  timeout_seconds: 900,
  deadline_at: "2026-12-02T09:15:00.000Z",
  input_tokens: 5210,
  output_tokens: 640,
  created_at: AT,
  started_at: AT,
  finished_at: "2026-12-02T09:02:11.000Z",
};

/** An operation's example: its request body, its answer, or (an answer without a body) its path parameters. */
export const OPERATION_EXAMPLES: Record<string, { request?: unknown; response?: unknown; params?: Record<string, string> }> = {
  signIn: { request: { token: "nhd_4f2a9c1e7b3d5a8f0e6c2b9d4a7f1e3c" } },
  getSignIn: { response: { token: { id: TOKEN, name: "ops", scopes: ["read", "send"] }, csrf_token: "q1Wk3v0m9Z8xYtR5sPaB7cDfGhJkLmNoPqRsTuVwXyZ", expires_at: "2026-12-02T17:00:00.000Z" } },

  sendMessage: { request: { target: "telegram:group:-1001234567890", text: "Deploy **v2.4.1** finished ✅", attachments: [{ type: "document", path: "reports/deploy.log" }] } },
  listDeliveries: { response: { deliveries: [delivery], total: 1, limit: 50, offset: 0 } },
  getDelivery: { response: delivery },
  retryDelivery: { response: { ...delivery, status: "queued", attempts: 3, platform_message_ids: [], sent_at: undefined } },
  listSessions: { response: { sessions: [session], total: 1, limit: 50, offset: 0 } },
  getSession: { response: session },
  getSessionHistory: {
    response: {
      messages: [
        { id: "1c2d3e4f-5a6b-4c7d-8e9f-a0b1c2d3e4f5", role: "user", content: "Where is my order #55102?", source: "web", created_at: AT, context: { timestamp: AT, channel: "web", chatType: "private", senderLabel: "Lena", roles: [] }, compacted: false },
        { id: "2d3e4f5a-6b7c-4d8e-9f0a-b1c2d3e4f5a6", role: "assistant", content: "It left the warehouse this morning.", source: "agent", created_at: AT, compacted: false },
      ],
      total: 2,
      truncated: false,
      compaction: null,
    },
  },
  sendSessionEvent: { request: { message: "The nightly backup finished: 42 GB in 18 min.", mode: "enqueue" } },
  listSessionEvents: { response: { events: [event] } },
  getSessionEvent: { response: event },
  listSessionTasks: { response: { tasks: [task] } },
  getTask: { response: task },
  stopTask: { response: { task_id: TASK, status: "cancelled", stopped: true } },
  createCronJob: { request: { name: "Morning report", schedule: { kind: "cron", expr: "0 9 * * 1-5", tz: "Europe/Berlin" }, target: "telegram:group:-1001234567890", payload: { kind: "notify", text: "Good morning! The report is ready." } } },
  listCronJobs: { response: { jobs: [cronJob], total: 1, limit: 50, offset: 0 } },
  getCronJob: { response: { ...cronJob, last_run: cronRun } },
  updateCronJob: { request: { enabled: false } },
  deleteCronJob: { params: { id: JOB } },
  runCronJob: { response: { run_id: RUN, status: "claimed" } },
  listCronRuns: { response: { runs: [cronRun], total: 1, limit: 50, offset: 0 } },
  getSendPolicy: { response: { default: "allow", rules: [{ effect: "deny", channel: "web" }] } },
  putSendPolicy: { request: { default: "deny", rules: [{ effect: "allow", channel: "telegram", chat_type: "group" }] } },
  listQuarantinedEvents: { response: { events: [{ id: EVENT, channel: "telegram", account_id: "7000000001", reason: "the update nests deeper than 64 levels", raw: '{"update_id":1,…}', raw_truncated: true, received_at: AT }], total: 1, limit: 50, offset: 0 } },
  createToken: { request: { name: "deploy-script", scopes: ["send"] } },
  listTokens: { response: { tokens: [token] } },
  revokeToken: { response: { ...token, revoked_at: AT } },
  listPlugins: { response: { plugins: [] } },
  health: { response: { status: "ok" } },
  ready: { response: { status: "ready", checks: { postgres: "ok", redis: "ok" } } },
  metrics: { response: '# HELP nahida_queue_workers Worker connections consuming each BullMQ queue\n# TYPE nahida_queue_workers gauge\nnahida_queue_workers{queue="lanes"} 2\n' },
};

type Transform = typeof jsonSchemaTransform;
type RouteSchema = { operationId?: string; body?: z.ZodType; response?: Record<string, unknown> };

/** `jsonSchemaTransform`, plus each operation's example, checked against its zod schema first. */
export const withOperationExamples: Transform = (input) => {
  const out = jsonSchemaTransform(input);
  const route = input.schema as RouteSchema | undefined;
  const id = route?.operationId;
  const example = id ? OPERATION_EXAMPLES[id] : undefined;
  if (!id || !example) return out;
  const transformed = out.schema as { body?: object; response?: Record<string, object>; params?: { properties?: Record<string, object> } };
  for (const [name, value] of Object.entries(example.params ?? {})) {
    const property = transformed.params?.properties?.[name];
    if (!property) throw new Error(`the OpenAPI example of ${id} names a parameter ${name} it does not have`);
    transformed.params!.properties![name] = { ...property, examples: [value] };
  }
  if (example.request !== undefined && route.body && transformed.body) {
    check(id, "request", route.body, example.request);
    transformed.body = withExample(transformed.body, example.request);
  }
  const success = Object.keys(route.response ?? {}).find((code) => code.startsWith("2"));
  if (example.response !== undefined && success && transformed.response?.[success]) {
    check(id, "response", route.response![success] as z.ZodType, example.response);
    transformed.response[success] = withExample(transformed.response[success]!, example.response);
  }
  return out;
};

/** A schema with its example; a reference is wrapped, as a sibling of `$ref` is lost when it is resolved. */
function withExample(schema: object, example: unknown): object {
  return "$ref" in schema ? { allOf: [schema], examples: [example] } : { ...schema, examples: [example] };
}

function check(id: string, what: string, schema: z.ZodType, value: unknown): void {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new Error(`the OpenAPI example of ${id} (${what}) does not fit its schema: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
}
