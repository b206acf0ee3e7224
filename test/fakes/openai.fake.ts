import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type {
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";

/** A tool call the fake model makes. */
export interface FakeToolCall {
  name: string;
  /** Sent as a JSON string; an object is serialised, a string is sent verbatim (even if it is not valid JSON). */
  arguments: string | Record<string, unknown>;
  /** Default `call_fake_<n>`. */
  id?: string;
}

/** Delay before the fake answers; the request counts as in flight meanwhile. */
interface DelayOption {
  delayMs?: number;
}

/** What the fake answers to one chat completion request. */
export type FakeOpenAIReply =
  | ({ content: string } & DelayOption)
  | ({ toolCalls: FakeToolCall[]; content?: string } & DelayOption)
  | ({
      /** HTTP status, e.g. 400, 429, 500. */
      status: number;
      /** `error.message`; a default per status when omitted. */
      error?: string;
      /** `error.type`; derived from the status when omitted ("requests" for 429, "server_error" for 5xx...). */
      type?: string;
      /** `error.code`; derived from the status when omitted. */
      code?: string | null;
      /** Sent as `retry-after-ms` and `retry-after`, which the openai SDK honours between its retries. */
      retryAfterMs?: number;
    } & DelayOption);

/**
 * The body the fake received, typed as the SDK's request params for convenience.
 * It is exactly what arrived, so an invalid request may not match the type.
 */
export type FakeOpenAIRequestBody = ChatCompletionCreateParamsBase;

/** One chat completion request, recorded in arrival order. */
export interface FakeOpenAIRequest {
  body: FakeOpenAIRequestBody;
  headers: IncomingHttpHeaders;
  at: Date;
  /** What the session key extractor returned; requests with the same key must not overlap. */
  sessionKey: string | undefined;
}

/** Computes a reply from the request; `undefined` falls through to the default reply. */
export type FakeOpenAIHandler = (
  request: FakeOpenAIRequest,
) => FakeOpenAIReply | undefined | Promise<FakeOpenAIReply | undefined>;

/** Options for {@link startFakeOpenAI}. */
export interface StartFakeOpenAIOptions {
  /** When set, requests without `Authorization: Bearer <apiKey>` get OpenAI's 401. */
  apiKey?: string;
  /**
   * Names the conversation a request belongs to, for overlap detection.
   * Default: the `user` field, else the text of the first system message.
   */
  sessionKey?: (body: FakeOpenAIRequestBody) => string | undefined;
  /**
   * The model's context window: a request whose prompt (messages and tools, a token per four
   * characters) is longer gets OpenAI's 400 `context_length_exceeded`, before any scripted reply.
   */
  contextWindowTokens?: number;
}

/** A running fake OpenAI-compatible server. */
export interface FakeOpenAI {
  /** Pass to the openai SDK as `baseURL`, e.g. `http://127.0.0.1:40123/v1`. */
  readonly baseURL: string;
  /** Chat completion requests, oldest first (GET /v1/models is not recorded). Cleared in place by {@link reset}. */
  readonly requests: readonly FakeOpenAIRequest[];
  /** Session keys that ever had two or more requests in flight at once. */
  readonly overlaps: readonly string[];
  /** Queues a reply; queued replies are used in order before the {@link onRequest} handler is asked. */
  enqueue(reply: FakeOpenAIReply): void;
  /** Sets (or with `undefined` clears) the handler asked when the queue is empty; after it, the reply is `{ content: "ok" }`. */
  onRequest(handler: FakeOpenAIHandler | undefined): void;
  /** Resolves with the first `count` requests once that many arrived; rejects after `timeoutMs` (default 5000). */
  waitForRequests(count: number, timeoutMs?: number): Promise<FakeOpenAIRequest[]>;
  /** Highest number of requests seen in flight at once for any single session key (0 before any keyed request). */
  maxConcurrentPerKey(): number;
  /** Forgets requests, queued replies, the handler and concurrency statistics. */
  reset(): void;
  /** Drops open connections and stops listening. */
  close(): Promise<void>;
}

const DEFAULT_MODEL = "fake-model";

interface RequestWaiter {
  count: number;
  resolve: (requests: FakeOpenAIRequest[]) => void;
}

interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

class ClientError extends Error {
  override readonly name = "ClientError";
  constructor(
    readonly status: number,
    readonly body: OpenAIErrorBody,
  ) {
    super(body.error.message);
  }
}

/** Starts a fake OpenAI chat completions API on 127.0.0.1 on an ephemeral port. */
export async function startFakeOpenAI(options: StartFakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const sessionKeyOf = options.sessionKey ?? defaultSessionKey;
  const requests: FakeOpenAIRequest[] = [];
  const waiters = new Set<RequestWaiter>();
  let queue: FakeOpenAIReply[] = [];
  let handler: FakeOpenAIHandler | undefined;
  let inFlight = new Map<string, number>();
  let maxPerKey = new Map<string, number>();
  let overlapping = new Set<string>();
  let sequence = 0;

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      const status = error instanceof ClientError ? error.status : 500;
      const body = error instanceof ClientError ? error.body : errorBody(500, { error: String(error) });
      writeJson(res, status, body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname.replace(/\/+$/, "");
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      throw new ClientError(401, {
        error: {
          message: "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
          type: "invalid_request_error",
          param: null,
          code: "invalid_api_key",
        },
      });
    }
    if (req.method === "GET" && path === "/v1/models") {
      return writeJson(res, 200, {
        object: "list",
        data: [{ id: DEFAULT_MODEL, object: "model", created: 1_700_000_000, owned_by: "nahida-fake" }],
      });
    }
    if (req.method === "POST" && path === "/v1/chat/completions") return chatCompletion(req, res);
    throw new ClientError(404, {
      error: { message: `Unknown request URL: ${req.method} ${path}.`, type: "invalid_request_error", param: null, code: "unknown_url" },
    });
  }

  async function chatCompletion(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJsonBody(req);
    const request: FakeOpenAIRequest = { body, headers: req.headers, at: new Date(), sessionKey: sessionKeyOf(body) };
    record(request);
    if (request.sessionKey !== undefined) trackInFlight(request.sessionKey, res);

    validate(body);
    const promptTokens = estimatePromptTokens(body);
    if (options.contextWindowTokens !== undefined && promptTokens > options.contextWindowTokens) {
      const message = `This model's maximum context length is ${options.contextWindowTokens} tokens. However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`;
      throw new ClientError(400, { error: { message, type: "invalid_request_error", param: "messages", code: "context_length_exceeded" } });
    }
    const reply = queue.shift() ?? (await handler?.(request)) ?? { content: "ok" };
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    if (res.destroyed) return;

    if ("status" in reply) {
      const headers: Record<string, string> = {};
      if (reply.retryAfterMs !== undefined) {
        headers["retry-after-ms"] = String(reply.retryAfterMs);
        headers["retry-after"] = String(Math.ceil(reply.retryAfterMs / 1000));
      }
      return writeJson(res, reply.status, errorBody(reply.status, reply), headers);
    }
    const id = `chatcmpl-fake${++sequence}`;
    const model = typeof body.model === "string" ? body.model : DEFAULT_MODEL;
    const toolCalls =
      "toolCalls" in reply
        ? reply.toolCalls.map((call, index) => ({
            id: call.id ?? `call_fake_${sequence}_${index}`,
            type: "function" as const,
            function: {
              name: call.name,
              arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
            },
          }))
        : [];
    const content = reply.content ?? null;
    const finishReason = toolCalls.length > 0 ? "tool_calls" : "stop";
    const usage = estimateUsage(body, content, toolCalls);

    if (body.stream === true) {
      return writeStream(res, { id, model, content, toolCalls, finishReason, usage, includeUsage: body.stream_options?.include_usage === true });
    }
    writeJson(res, 200, {
      id,
      object: "chat.completion",
      created: nowSeconds(),
      model,
      system_fingerprint: "fp_fake",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content,
            refusal: null,
            annotations: [],
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          },
          logprobs: null,
          finish_reason: finishReason,
        },
      ],
      usage,
    });
  }

  function record(request: FakeOpenAIRequest): void {
    requests.push(request);
    for (const waiter of waiters) {
      if (requests.length >= waiter.count) {
        waiters.delete(waiter);
        waiter.resolve(requests.slice(0, waiter.count));
      }
    }
  }

  /** Counts the request as in flight until its response ends or the client goes away. */
  function trackInFlight(key: string, res: ServerResponse): void {
    const now = (inFlight.get(key) ?? 0) + 1;
    inFlight.set(key, now);
    maxPerKey.set(key, Math.max(maxPerKey.get(key) ?? 0, now));
    if (now > 1) overlapping.add(key);
    // Captured so a reset() during the request does not decrement the fresh map.
    const counts = inFlight;
    res.once("close", () => {
      const left = (counts.get(key) ?? 1) - 1;
      if (left > 0) counts.set(key, left);
      else counts.delete(key);
    });
  }

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    get overlaps() {
      return [...overlapping];
    },
    enqueue(reply) {
      queue.push(reply);
    },
    onRequest(next) {
      handler = next;
    },
    waitForRequests(count, timeoutMs = 5000) {
      if (requests.length >= count) return Promise.resolve(requests.slice(0, count));
      return new Promise((resolve, reject) => {
        const waiter: RequestWaiter = {
          count,
          resolve: (found) => {
            clearTimeout(timer);
            resolve(found);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${count} chat completion request(s); got ${requests.length}`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    maxConcurrentPerKey() {
      return Math.max(0, ...maxPerKey.values());
    },
    reset() {
      requests.length = 0;
      queue = [];
      handler = undefined;
      inFlight = new Map();
      maxPerKey = new Map();
      overlapping = new Set();
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

function defaultSessionKey(body: FakeOpenAIRequestBody): string | undefined {
  if (typeof body.user === "string" && body.user !== "") return body.user;
  const system = Array.isArray(body.messages) ? body.messages.find((m) => m.role === "system") : undefined;
  return system ? messageText(system) : undefined;
}

/** The prompt's tokens as the fake counts them: a token per four characters of the messages (tool calls included) and the tools. */
export function estimatePromptTokens(body: FakeOpenAIRequestBody): number {
  const messages = Array.isArray(body.messages)
    ? body.messages.reduce((n, m) => n + messageText(m).length + ("tool_calls" in m && Array.isArray(m.tool_calls) ? JSON.stringify(m.tool_calls).length : 0), 0)
    : 0;
  return Math.ceil((messages + (body.tools ? JSON.stringify(body.tools).length : 0)) / 4);
}

function messageText(message: ChatCompletionMessageParam): string {
  const content: unknown = message.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) => (typeof part === "object" && part !== null && "text" in part ? String(part.text) : ""))
    .join("");
}

/** Rejects what OpenAI rejects, including the tool-message ordering rules an agent loop most easily breaks. */
function validate(body: FakeOpenAIRequestBody): void {
  const invalid = (message: string, param: string | null, code: string | null = null): never => {
    throw new ClientError(400, { error: { message, type: "invalid_request_error", param, code } });
  };
  if (typeof body.model !== "string" || body.model === "") invalid("you must provide a model parameter", null);
  if (!Array.isArray(body.messages)) invalid("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  const messages = body.messages;
  if (messages.length === 0) {
    invalid("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "messages", "empty_array");
  }

  let i = 0;
  while (i < messages.length) {
    const message = messages[i] as ChatCompletionMessageParam;
    if (message.role === "tool") {
      invalid("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", `messages.[${i}].role`);
    }
    const calls = message.role === "assistant" ? (message.tool_calls ?? []) : [];
    i++;
    if (calls.length === 0) continue;
    const unanswered = new Set(calls.map((call) => call.id));
    for (; messages[i]?.role === "tool"; i++) {
      const reply = messages[i] as { tool_call_id?: string };
      if (!unanswered.delete(reply.tool_call_id ?? "")) {
        invalid("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", `messages.[${i}].role`);
      }
    }
    if (unanswered.size > 0) {
      invalid(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...unanswered].join(", ")}`,
        `messages.[${i - 1}].role`,
      );
    }
  }
}

interface StreamPlan {
  id: string;
  model: string;
  content: string | null;
  toolCalls: { id: string; type: "function"; function: { name: string; arguments: string } }[];
  finishReason: string;
  usage: ReturnType<typeof estimateUsage>;
  includeUsage: boolean;
}

/** Server-sent events in the order OpenAI emits them: role, content pieces, tool call pieces, finish, usage, [DONE]. */
function writeStream(res: ServerResponse, plan: StreamPlan): void {
  const created = nowSeconds();
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({
      id: plan.id,
      object: "chat.completion.chunk",
      created,
      model: plan.model,
      system_fingerprint: "fp_fake",
      choices,
      ...(plan.includeUsage ? { usage: null } : {}),
      ...extra,
    })}\n\n`;
  const delta = (d: Record<string, unknown>, finishReason: string | null = null) =>
    chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finishReason }]);

  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-request-id": `req_${plan.id}` });
  res.write(delta({ role: "assistant", content: plan.toolCalls.length > 0 ? null : "", refusal: null }));
  for (const piece of plan.content?.match(/\s*\S+\s*|\s+/g) ?? []) res.write(delta({ content: piece }));
  plan.toolCalls.forEach((call, index) => {
    res.write(delta({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] }));
    for (const piece of call.function.arguments.match(/[\s\S]{1,16}/g) ?? []) {
      res.write(delta({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  res.write(delta({}, plan.finishReason));
  if (plan.includeUsage) res.write(chunk([], { usage: plan.usage }));
  res.end("data: [DONE]\n\n");
}

/** Roughly four characters per token; tests only need plausible, non-zero numbers. */
function estimateUsage(body: FakeOpenAIRequestBody, content: string | null, toolCalls: { function: { arguments: string } }[]) {
  const promptChars = Array.isArray(body.messages) ? body.messages.reduce((n, m) => n + messageText(m).length, 0) : 0;
  const completionChars = (content?.length ?? 0) + toolCalls.reduce((n, c) => n + c.function.arguments.length, 0);
  const prompt_tokens = Math.max(1, Math.ceil(promptChars / 4));
  const completion_tokens = Math.max(1, Math.ceil(completionChars / 4));
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

function errorBody(status: number, reply: { error?: string; type?: string; code?: string | null }): OpenAIErrorBody {
  const defaults: { message: string; type: string; code: string | null } =
    status === 429
      ? { message: "Rate limit reached for requests. Please try again later.", type: "requests", code: "rate_limit_exceeded" }
      : status >= 500
        ? { message: "The server had an error while processing your request. Sorry about that!", type: "server_error", code: null }
        : status === 401
          ? { message: "Incorrect API key provided.", type: "invalid_request_error", code: "invalid_api_key" }
          : status === 403
            ? { message: "You are not allowed to sample from this model.", type: "permission_error", code: null }
            : status === 404
              ? { message: "The model does not exist or you do not have access to it.", type: "invalid_request_error", code: "model_not_found" }
              : { message: "Invalid request.", type: "invalid_request_error", code: null };
  return {
    error: {
      message: reply.error ?? defaults.message,
      type: reply.type ?? defaults.type,
      param: null,
      code: reply.code !== undefined ? reply.code : defaults.code,
    },
  };
}

async function readJsonBody(req: IncomingMessage): Promise<FakeOpenAIRequestBody> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ClientError(400, {
      error: {
        message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)",
        type: "invalid_request_error",
        param: null,
        code: null,
      },
    });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ClientError(400, { error: { message: "The request body must be a JSON object.", type: "invalid_request_error", param: null, code: null } });
  }
  return parsed as FakeOpenAIRequestBody;
}

function writeJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(payload),
    "x-request-id": `req_fake_${Date.now().toString(36)}`,
    ...headers,
  });
  res.end(payload);
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
