import OpenAI, { APIError, AuthenticationError, BadRequestError, InternalServerError } from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "./openai.fake";

describe("fake OpenAI through the openai SDK", () => {
  let fake: FakeOpenAI;
  let client: OpenAI;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    client = new OpenAI({ baseURL: fake.baseURL, apiKey: "x", maxRetries: 0 });
  });
  afterEach(() => fake.reset());
  afterAll(() => fake.close());

  it("answers ok by default with a real-shaped completion and records the request", async () => {
    const completion = await client.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "hi" }],
    });

    expect(completion).toMatchObject({
      object: "chat.completion",
      model: "gpt-test",
      choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
      usage: { prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) },
    });
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(typeof completion.created).toBe("number");
    const [request] = await fake.waitForRequests(1, 1000);
    expect(request?.body.messages).toEqual([{ role: "user", content: "hi" }]);
    expect(request?.headers.authorization).toBe("Bearer x");
  });

  it("replays queued replies in order, including tool calls", async () => {
    fake.enqueue({ toolCalls: [{ name: "get_weather", arguments: { city: "Sumeru" }, id: "call_1" }] });
    fake.enqueue({ content: "It is sunny." });

    const first = await client.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "weather?" }],
      tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
    });
    const choice = first.choices[0];
    expect(choice?.finish_reason).toBe("tool_calls");
    expect(choice?.message.tool_calls).toEqual([
      { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Sumeru"}' } },
    ]);

    const second = await client.chat.completions.create({
      model: "gpt-test",
      messages: [
        { role: "user", content: "weather?" },
        { role: "assistant", content: null, tool_calls: choice?.message.tool_calls ?? [] },
        { role: "tool", tool_call_id: "call_1", content: "sunny" },
      ],
    });
    expect(second.choices[0]?.message.content).toBe("It is sunny.");
  });

  it("rejects a tool call left without its tool message, as OpenAI does", async () => {
    const error = await client.chat.completions
      .create({
        model: "gpt-test",
        messages: [
          { role: "user", content: "weather?" },
          { role: "assistant", content: null, tool_calls: [{ id: "call_9", type: "function", function: { name: "f", arguments: "{}" } }] },
          { role: "user", content: "well?" },
        ],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).message).toMatch(/call_9/);
  });

  it("surfaces scripted error statuses as APIError subclasses", async () => {
    fake.enqueue({ status: 500 });
    fake.enqueue({ status: 400, error: "context too long", code: "context_length_exceeded" });

    const server = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "a" }] }).catch((e: unknown) => e);
    expect(server).toBeInstanceOf(InternalServerError);
    expect(server).toMatchObject({ status: 500, type: "server_error" });

    const bad = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "a" }] }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(APIError);
    expect(bad).toMatchObject({ status: 400, code: "context_length_exceeded", error: { message: "context too long" } });
  });

  it("lets the SDK retry a 429 after retry-after-ms", async () => {
    const retrying = new OpenAI({ baseURL: fake.baseURL, apiKey: "x", maxRetries: 1 });
    fake.enqueue({ status: 429, retryAfterMs: 10 });
    fake.enqueue({ content: "after retry" });

    const completion = await retrying.chat.completions.create({ model: "m", messages: [{ role: "user", content: "a" }] });
    expect(completion.choices[0]?.message.content).toBe("after retry");
    expect(fake.requests).toHaveLength(2);
  });

  it("computes replies from the request with onRequest", async () => {
    fake.onRequest((request) => {
      const last = request.body.messages.at(-1);
      return { content: `echo: ${typeof last?.content === "string" ? last.content : ""}` };
    });
    const completion = await client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "ping" }] });
    expect(completion.choices[0]?.message.content).toBe("echo: ping");
  });

  it("streams chat.completion.chunk events ending in [DONE]", async () => {
    fake.enqueue({ content: "Hello there, traveller." });
    const stream = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let finish: string | null | undefined;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).toBe("chat.completion.chunk");
      text += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe("Hello there, traveller.");
    expect(finish).toBe("stop");
    expect(usage?.total_tokens).toBeGreaterThan(0);

    fake.enqueue({ toolCalls: [{ name: "lookup", arguments: { query: "a fairly long argument string" } }] });
    const toolStream = client.chat.completions.stream({ model: "m", messages: [{ role: "user", content: "hi" }] });
    const final = await toolStream.finalChatCompletion();
    expect(final.choices[0]?.finish_reason).toBe("tool_calls");
    const call = final.choices[0]?.message.tool_calls?.[0];
    expect(call?.type === "function" ? JSON.parse(call.function.arguments) : undefined).toEqual({ query: "a fairly long argument string" });
  });

  it("tracks requests of one session in flight at the same time", async () => {
    const ask = (user: string) =>
      client.chat.completions.create({ model: "m", user, messages: [{ role: "user", content: "x" }] });

    fake.enqueue({ content: "a", delayMs: 100 });
    fake.enqueue({ content: "b", delayMs: 100 });
    await Promise.all([ask("session-1"), ask("session-2")]);
    expect(fake.maxConcurrentPerKey()).toBe(1);
    expect(fake.overlaps).toEqual([]);

    fake.enqueue({ content: "c", delayMs: 100 });
    fake.enqueue({ content: "d", delayMs: 100 });
    await Promise.all([ask("session-1"), ask("session-1")]);
    expect(fake.maxConcurrentPerKey()).toBe(2);
    expect(fake.overlaps).toEqual(["session-1"]);

    await client.chat.completions.create({
      model: "m",
      messages: [{ role: "system", content: "You are Nahida in chat 42." }, { role: "user", content: "x" }],
    });
    expect(fake.requests.at(-1)?.sessionKey).toBe("You are Nahida in chat 42.");
  });

  it("lists models", async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toContain("fake-model");
  });
});

describe("fake OpenAI with an API key", () => {
  let fake: FakeOpenAI;

  beforeAll(async () => {
    fake = await startFakeOpenAI({ apiKey: "sk-right", sessionKey: (body) => body.metadata?.session });
  });
  afterAll(() => fake.close());

  it("answers a wrong key with OpenAI's 401 and accepts the right one", async () => {
    const wrong = new OpenAI({ baseURL: fake.baseURL, apiKey: "sk-wrong", maxRetries: 0 });
    const error = await wrong.chat.completions.create({ model: "m", messages: [{ role: "user", content: "a" }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({ status: 401, code: "invalid_api_key" });

    const right = new OpenAI({ baseURL: fake.baseURL, apiKey: "sk-right", maxRetries: 0 });
    await right.chat.completions.create({ model: "m", metadata: { session: "s1" }, messages: [{ role: "user", content: "a" }] });
    expect(fake.requests.map((r) => r.sessionKey)).toEqual(["s1"]);
  });
});
