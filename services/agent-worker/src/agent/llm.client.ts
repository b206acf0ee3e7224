import OpenAI from "openai";
import { wellFormed } from "@nahida/contracts";
import { SpanKind, secondsSince, withSpan, type LlmMetrics } from "@nahida/observability";

/** One message in the chat-completions shape the agent loop speaks. */
export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON schema of the arguments. */
  parameters: Record<string, unknown>;
}

export interface CompletionRequest {
  messages: ChatMessage[];
  tools: ToolSpec[];
  /** Stable id of the conversation (the session), sent as the API's `user` field. */
  user: string;
  signal?: AbortSignal;
  /** The longest answer, in tokens (`max_tokens`); the API's default when unset. */
  maxTokens?: number;
}

export interface Completion {
  content: string | null;
  toolCalls: ToolCall[];
  /** Tokens in and out, when the API reports them; `cached`: input tokens the provider's prompt cache served. */
  usage?: { input: number; output: number; cached?: number };
}

/**
 * The API refused the prompt as longer than the model's context window (OpenAI's 400
 * `context_length_exceeded`, or the same words from a compatible server).
 */
export class ContextOverflowError extends Error {
  override name = "ContextOverflowError";
  readonly code = "context_overflow";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Whether an API error says the prompt does not fit the model's window. */
export function isContextOverflow(error: unknown): boolean {
  if (!(error instanceof OpenAI.APIError) || error.status !== 400) return false;
  return error.code === "context_length_exceeded" || /maximum context length|context (length|window|size)|too many tokens|prompt is too long/i.test(error.message);
}

/** The agent's only view of a language model. */
export interface LlmClient {
  readonly model: string;
  complete(request: CompletionRequest): Promise<Completion>;
}

export interface OpenAiLlmOptions {
  baseURL: string;
  apiKey: string;
  model: string;
  timeoutMs?: number;
  /** SDK retries for 429/5xx/connection errors. */
  maxRetries?: number;
  /** Calls, tokens and latency by model. */
  metrics?: LlmMetrics;
}

/**
 * An LlmClient over any OpenAI-compatible chat-completions endpoint. Each call is a span in
 * the GenAI conventions' names (`chat <model>`, `gen_ai.usage.*`); its duration is the
 * latency. Prompts and answers stay out of the span.
 */
export function createOpenAiLlm(options: OpenAiLlmOptions): LlmClient {
  const client = new OpenAI({
    baseURL: options.baseURL,
    apiKey: options.apiKey,
    timeout: options.timeoutMs ?? 120_000,
    maxRetries: options.maxRetries ?? 2,
  });
  const serverAddress = new URL(options.baseURL).hostname;
  const create = (request: CompletionRequest) =>
    client.chat.completions.create(
      {
        model: options.model,
        messages: request.messages,
        user: request.user,
        ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
        ...(request.tools.length > 0 ? { tools: request.tools.map((t) => ({ type: "function" as const, function: t })) } : {}),
      },
      { signal: request.signal },
    );
  return {
    model: options.model,
    complete: (request) =>
      withSpan(
        `chat ${options.model}`,
        { kind: SpanKind.CLIENT, attributes: { "gen_ai.operation.name": "chat", "gen_ai.request.model": options.model, "server.address": serverAddress } },
        async (span) => {
          const completion = await complete(request);
          span.setAttributes({
            "gen_ai.response.model": completion.response.model,
            ...(completion.response.usage
              ? { "gen_ai.usage.input_tokens": completion.response.usage.prompt_tokens, "gen_ai.usage.output_tokens": completion.response.usage.completion_tokens }
              : {}),
            "gen_ai.response.finish_reasons": completion.response.choices.map((c) => c.finish_reason),
          });
          return completion.result;
        },
      ),
  };

  async function complete(request: CompletionRequest) {
    const started = performance.now();
    const model = options.model;
    let response;
    try {
      response = await create(request);
    } catch (error) {
      options.metrics?.calls.inc({ model, outcome: "error" });
      options.metrics?.durationSeconds.observe({ model, outcome: "error" }, secondsSince(started));
      if (isContextOverflow(error)) throw new ContextOverflowError((error as Error).message, { cause: error });
      throw error;
    }
    if (options.metrics) {
      options.metrics.calls.inc({ model, outcome: "ok" });
      options.metrics.durationSeconds.observe({ model, outcome: "ok" }, secondsSince(started));
      if (response.usage) {
        options.metrics.tokens.inc({ model, direction: "in" }, response.usage.prompt_tokens);
        options.metrics.tokens.inc({ model, direction: "out" }, response.usage.completion_tokens);
        const cached = response.usage.prompt_tokens_details?.cached_tokens;
        if (cached) options.metrics.tokens.inc({ model, direction: "cached" }, cached);
      }
    }
    const message = response.choices[0]?.message;
    const toolCalls = (message?.tool_calls ?? []).flatMap((call) =>
      call.type === "function" ? [{ id: call.id, type: "function" as const, function: { name: call.function.name, arguments: wellFormed(call.function.arguments) } }] : [],
    );
    // What the model says is stored and sent; it must be text Postgres takes.
    const result: Completion = {
      content: message?.content == null ? null : wellFormed(message.content),
      toolCalls,
      ...(response.usage
        ? {
            usage: {
              input: response.usage.prompt_tokens,
              output: response.usage.completion_tokens,
              ...(response.usage.prompt_tokens_details?.cached_tokens !== undefined ? { cached: response.usage.prompt_tokens_details.cached_tokens } : {}),
            },
          }
        : {}),
    };
    return { result, response };
  }
}
