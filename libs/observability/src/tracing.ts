import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context,
  isSpanContextValid,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
} from "@opentelemetry/api";

export { SpanKind, SpanStatusCode, type Attributes, type Span };

/**
 * Nahida's spans all come from this tracer. Only `@opentelemetry/api` is used here: until
 * the launcher registers an SDK (tracing configured), every call below is a no-op of the
 * API's own and nothing is recorded or stored.
 */
export const tracer = () => trace.getTracer("nahida");

export interface WithSpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The span's parent; default the active context. */
  parent?: Context;
  links?: Link[];
  /**
   * Errors that end the span without marking it failed (a job moved to delayed, say);
   * they are still rethrown.
   */
  expected?: (error: unknown) => boolean;
}

/**
 * Runs `fn` in a new active span; a throw is recorded on the span (status ERROR) and
 * rethrown. The span ends when `fn` settles.
 */
export function withSpan<T>(name: string, options: WithSpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const { parent, expected, ...spanOptions } = options;
  return tracer().startActiveSpan(name, spanOptions, parent ?? context.active(), async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      if (!expected?.(error)) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      }
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * The active span as a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`), for work
 * stored in a row and picked up later by another process; null when nothing is traced.
 * Written by hand rather than through the global propagator: a row holds this one small
 * string whatever OTEL_PROPAGATORS says, and tracestate is not kept.
 */
export function currentTraceparent(): string | null {
  const active = activeSpanContext();
  return active ? `00-${active.traceId}-${active.spanId}-${flagsOf(active)}` : null;
}

/** The active span's context when it is a real one (none without an SDK). */
function activeSpanContext(): SpanContext | null {
  const spanContext = trace.getActiveSpan()?.spanContext();
  return spanContext && isSpanContextValid(spanContext) ? spanContext : null;
}

const flagsOf = (spanContext: SpanContext) => (spanContext.traceFlags & TraceFlags.SAMPLED ? "01" : "00");

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Reads a stored `traceparent`; null when absent or malformed (a bad row never fails the work). */
export function parseTraceparent(traceparent: string | null | undefined): SpanContext | null {
  const match = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!match) return null;
  const spanContext: SpanContext = { traceId: match[1]!, spanId: match[2]!, traceFlags: Number.parseInt(match[3]!, 16), isRemote: true };
  return isSpanContextValid(spanContext) ? spanContext : null;
}

/** A context whose parent is the stored span, for a span continuing that trace; the root context when there is none. */
export function contextFromTraceparent(traceparent: string | null | undefined): Context {
  const spanContext = parseTraceparent(traceparent);
  return spanContext ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : ROOT_CONTEXT;
}

/** The active span's ids for a log line (`trace_id`, `span_id`); empty when nothing is traced. */
export function logTraceFields(): { trace_id?: string; span_id?: string; trace_flags?: string } {
  const active = activeSpanContext();
  return active ? { trace_id: active.traceId, span_id: active.spanId, trace_flags: flagsOf(active) } : {};
}
