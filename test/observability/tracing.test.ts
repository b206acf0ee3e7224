import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SpanKind } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { registerTracingHooks, startTracing, type Tracing } from "@nahida/launcher/src/tracing";
import type { Harness } from "../support/nahida-harness";

const SECRET = "webhook-Secret_123";
const CHAT_ID = 300000042;

/**
 * The whole pipeline of one process with the SDK the launcher starts, spans kept in
 * memory: one Telegram webhook POST must come out as one trace down to the sendMessage
 * call, across the `lanes` hop (a lane item row plus a de-duplicated wake job) and the
 * `outbound` hop (a delivery job), parented the way separate ingress, agent-worker and
 * delivery processes would parent them (the context travels only in Redis and Postgres).
 */
describe("tracing: one trace from a Telegram webhook to sendMessage", () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let h: Harness;
  let token: string;
  let url: string;
  let waitFor: typeof import("../support/infra").waitFor;

  beforeAll(async () => {
    // Before the services are imported, as the launcher's main does: pg, ioredis and http
    // are patched as they are loaded.
    await registerTracingHooks();
    tracing = startTracing({ serviceName: "nahida-test", spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const { startHarness, TEST_BOT_TOKEN } = await import("../support/nahida-harness");
    ({ waitFor } = await import("../support/infra"));
    token = TEST_BOT_TOKEN;
    const port = await (await import("../support/ports")).freePort();
    url = `http://127.0.0.1:${port}/telegram/webhook`;
    h = await startHarness("otel_trace", {
      TELEGRAM_MODE: "webhook",
      TELEGRAM_WEBHOOK_SECRET: SECRET,
      TELEGRAM_WEBHOOK_PORT: String(port),
      TELEGRAM_WEBHOOK_URL: url,
      // Turns tracing on in the services (jobs carry their trace); the SDK above is the one
      // this process has, so the exporter named here is never built.
      OTEL_TRACES_EXPORTER: "otlp",
    });
  });
  afterAll(async () => {
    await h?.close();
    await tracing?.stop();
  });

  it("parents ingress, run, LLM, tool and delivery spans in the webhook's trace", async () => {
    h.openai.enqueue({ toolCalls: [{ name: "current_time", arguments: {} }] });
    h.openai.enqueue({ content: "It is tea time." });
    exporter.reset();

    const update = {
      update_id: 910001,
      message: { message_id: 7, date: Math.floor(Date.now() / 1000), chat: { id: CHAT_ID, type: "private", first_name: "Ada" }, from: { id: CHAT_ID, is_bot: false, first_name: "Ada" }, text: "what time is it?" },
    };
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET }, body: JSON.stringify(update) });
    expect(response.status).toBe(200);

    await waitFor(async () => h.telegram.sent(CHAT_ID).length > 0, 30_000, "the reply");
    expect(String(h.telegram.sent(CHAT_ID)[0]!.params.text)).toContain("It is tea time.");
    // The delivery span ends after the platform answered and the part was recorded; the
    // BullMQ consumer span around it ends a moment later, once the job is marked completed.
    const spans = await waitFor(async () => {
      const finished = exporter.getFinishedSpans();
      const sent = finished.find((s) => s.name === "delivery.send" && s.attributes["nahida.delivery.outcome"] === "sent");
      return sent && finished.some((s) => s.spanContext().spanId === sent.parentSpanContext?.spanId) && finished;
    }, 15_000, "the delivery span and the consumer span around it");

    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const parentOf = (span: ReadableSpan) => byId.get(span.parentSpanContext?.spanId ?? "");
    const ancestors = (span: ReadableSpan): ReadableSpan[] => {
      const chain: ReadableSpan[] = [];
      for (let parent = parentOf(span); parent; parent = parentOf(parent)) chain.push(parent);
      return chain;
    };
    const one = (name: string, where: (s: ReadableSpan) => boolean = () => true) => {
      const found = spans.filter((s) => s.name === name && where(s));
      expect(found.map((s) => s.name), `exactly one ${name} span`).toEqual([name]);
      return found[0]!;
    };

    const webhook = spans.find((s) => s.kind === SpanKind.SERVER && s.attributes["http.route"] === "/telegram/webhook")
      ?? spans.find((s) => s.kind === SpanKind.SERVER && String(s.attributes["http.target"] ?? s.attributes["url.path"]).startsWith("/telegram/webhook"));
    expect(webhook, "the webhook POST's server span").toBeDefined();
    const platformEvent = one("telegram.update");
    const ingress = one("ingress.accept");
    const run = one("lane.run");
    const llm = spans.filter((s) => s.name === "chat fake-model");
    const tool = one("execute_tool current_time");
    const delivery = one("delivery.send", (s) => s.attributes["nahida.delivery.outcome"] === "sent");
    const send = one("telegram.sendMessage");

    // One trace, from the POST to the platform send.
    const traceId = webhook!.spanContext().traceId;
    for (const span of [platformEvent, ingress, run, ...llm, tool, delivery, send]) expect(span.spanContext().traceId, span.name).toBe(traceId);

    expect(ancestors(platformEvent)).toContain(webhook);
    expect(parentOf(ingress)).toBe(platformEvent);
    // Hop 1: the lane item carries the ingress span to the run (the wake job is only a wake-up).
    expect(parentOf(run)).toBe(ingress);
    const wakeProducer = spans.find((s) => s.kind === SpanKind.PRODUCER && s.attributes["bullmq.queue.name"] === "lanes");
    expect(wakeProducer && ancestors(wakeProducer)).toContain(ingress);
    // The run: two model calls (the tool call, then the answer) and the tool between them.
    expect(llm).toHaveLength(2);
    for (const call of llm) {
      expect(parentOf(call)).toBe(run);
      expect(call.kind).toBe(SpanKind.CLIENT);
      expect(call.attributes["gen_ai.request.model"]).toBe("fake-model");
      expect(call.attributes["gen_ai.usage.input_tokens"]).toEqual(expect.any(Number));
      expect(call.attributes["gen_ai.usage.output_tokens"]).toEqual(expect.any(Number));
    }
    expect(parentOf(tool)).toBe(run);
    expect(tool.attributes["gen_ai.tool.name"]).toBe("current_time");
    // Hop 2: the delivery job carries the run's context to the delivery worker.
    const deliveryConsumer = parentOf(delivery);
    expect(deliveryConsumer?.kind).toBe(SpanKind.CONSUMER);
    expect(deliveryConsumer?.attributes["bullmq.queue.name"]).toBe("outbound");
    const deliveryProducer = parentOf(deliveryConsumer!);
    expect(deliveryProducer?.kind).toBe(SpanKind.PRODUCER);
    expect(ancestors(deliveryProducer!)).toContain(run);
    // The platform send, and the HTTP request under it.
    expect(parentOf(send)).toBe(delivery);
    expect(send.kind).toBe(SpanKind.CLIENT);
    const http = spans.filter((s) => s.kind === SpanKind.CLIENT && parentOf(s) === send);
    expect(http.length, "the sendMessage HTTP request span").toBeGreaterThan(0);

    // Postgres work shows up in the same trace. (ioredis is patched in the launcher's own
    // process, not under vitest's module loader, so its spans are not asserted here.)
    expect(spans.some((s) => s.spanContext().traceId === traceId && s.attributes["db.system.name"] === "postgresql"), "a Postgres query span").toBe(true);
  });

  it("keeps the bot token out of every span", () => {
    const leaks = exporter.getFinishedSpans().flatMap((s) =>
      [s.name, ...Object.values(s.attributes).map(String), ...s.events.flatMap((e) => Object.values(e.attributes ?? {}).map(String))]
        .filter((value) => value.includes(token))
        .map((value) => `${s.name}: ${value}`),
    );
    expect(leaks).toEqual([]);
  });

  it("runs a sub-agent in its parent's trace: the child's run is a child of the spawn's tool span", async () => {
    const chat = CHAT_ID + 1;
    h.openai.onRequest((request) => {
      const messages = request.body.messages as { role: string; content?: string }[];
      if (messages.some((m) => m.role === "user" && String(m.content).startsWith("[sub-agent task"))) return { content: "child result" };
      const last = messages.at(-1)!;
      if (last.role === "user" && String(last.content).startsWith("[sub-agent")) return { content: "NO_REPLY" };
      return last.role === "tool" ? { content: "Spawned." } : { toolCalls: [{ name: "agent_spawn", arguments: { task: "trace me" } }] };
    });
    exporter.reset();
    const update = {
      update_id: 910002,
      message: { message_id: 8, date: Math.floor(Date.now() / 1000), chat: { id: chat, type: "private", first_name: "Ada" }, from: { id: chat, is_bot: false, first_name: "Ada" }, text: "spawn one" },
    };
    expect((await fetch(url, { method: "POST", headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET }, body: JSON.stringify(update) })).status).toBe(200);
    const spans = await waitFor(async () => {
      const finished = exporter.getFinishedSpans();
      return finished.some((s) => s.name === "lane.run" && String(s.attributes["nahida.lane.key"]).includes("/sub:")) && finished;
    }, 30_000, "the child's run span");
    h.openai.onRequest(undefined);
    const spawn = spans.find((s) => s.name === "execute_tool agent_spawn")!;
    const child = spans.find((s) => s.name === "lane.run" && String(s.attributes["nahida.lane.key"]).includes("/sub:"))!;
    expect(spawn).toBeDefined();
    expect(child.spanContext().traceId).toBe(spawn.spanContext().traceId);
    expect(child.parentSpanContext?.spanId).toBe(spawn.spanContext().spanId);
  });
});
