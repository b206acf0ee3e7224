import type { ClientRequest, IncomingMessage } from "node:http";
import { register } from "node:module";
import { FastifyOtelInstrumentation } from "@fastify/otel";
import { HttpInstrumentation } from "@opentelemetry/instrumentation-http";
import { IORedisInstrumentation } from "@opentelemetry/instrumentation-ioredis";
import { PgInstrumentation } from "@opentelemetry/instrumentation-pg";
import { UndiciInstrumentation } from "@opentelemetry/instrumentation-undici";
import { NodeSDK, tracing } from "@opentelemetry/sdk-node";
import { createAddHookMessageChannel } from "import-in-the-middle";

export interface TracingOptions {
  /** `service.name` of every span (OTEL_SERVICE_NAME, else `nahida`). */
  serviceName: string;
  /**
   * Where finished spans go. Default: the exporters the SDK builds from the standard
   * variables (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_*), which it reads itself.
   */
  spanProcessors?: tracing.SpanProcessor[];
}

export interface Tracing {
  /** Flushes the spans still buffered and stops the SDK. */
  stop(): Promise<void>;
}

/** A Telegram Bot API path: `/bot<token>/<method>` (and `/file/bot<token>/…`). */
const BOT_TOKEN_IN_PATH = /\/bot\d+:[\w-]+\//;

/**
 * The URL attributes of a request whose path holds a bot token, with the token replaced.
 * instrumentation-http records the URL before its request hook runs, so the hook
 * overwrites the attributes, under the old and the stable names. Incoming requests too: a
 * webhook route may be set up with the token in its path.
 */
function redactedUrlAttributes(request: ClientRequest | IncomingMessage): Record<string, string> | null {
  const path = "path" in request ? request.path : request.url;
  if (!path || !BOT_TOKEN_IN_PATH.test(path)) return null;
  const redacted = path.replace(BOT_TOKEN_IN_PATH, "/bot[redacted]/");
  const attributes: Record<string, string> = { "http.target": redacted, "url.path": redacted.split("?")[0]! };
  if ("path" in request) {
    const url = `${request.protocol}//${request.host}${redacted}`;
    Object.assign(attributes, { "http.url": url, "url.full": url });
  }
  return attributes;
}

/**
 * Registers the ESM loader hook through which instrumentations patch modules that ES
 * modules import (pg, ioredis); only the modules an instrumentation asks for are wrapped.
 * Must run before those modules are first imported, so the launcher imports the services
 * only after it. Returns once the loader has every hook.
 */
export async function registerTracingHooks(): Promise<void> {
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register("import-in-the-middle/hook.mjs", import.meta.url, registerOptions);
  await waitForAllMessagesAcknowledged();
}

/**
 * Starts the OpenTelemetry SDK with the instrumentations Nahida needs: HTTP in and out
 * (webhooks, the Bot API, Milky), fetch (the LLM client), Fastify, pg (Prisma's queries too) and ioredis.
 * Metrics stay with prom-client and logs with pino (which adds `trace_id`/`span_id`), so
 * the SDK exports traces only.
 */
export function startTracing(options: TracingOptions): Tracing {
  const sdk = new NodeSDK({
    serviceName: options.serviceName,
    instrumentations: [
      new HttpInstrumentation({
        requestHook: (span, request) => {
          const redacted = redactedUrlAttributes(request);
          if (redacted) span.setAttributes(redacted);
        },
      }),
      new UndiciInstrumentation(),
      new FastifyOtelInstrumentation({ registerOnInitialization: true }),
      // A span per query, Prisma's included (it queries through the pg driver adapter), only
      // under a traced span: the scheduler's polls and the sweeps would each start a trace.
      // (@prisma/instrumentation is left out for that reason: it cannot require a parent.)
      new PgInstrumentation({ ignoreConnectSpans: true, requireParentSpan: true }),
      // BullMQ's blocking reads and scripts under a job span are the queue hop itself.
      new IORedisInstrumentation({ requireParentSpan: true }),
    ],
    metricReaders: [],
    logRecordProcessors: [],
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
  });
  sdk.start();
  return { stop: () => sdk.shutdown() };
}
