import { z } from "zod";

/** Trace exporters the SDK knows by name (OTEL_TRACES_EXPORTER, comma-separated). */
const TRACES_EXPORTERS = ["otlp", "console", "zipkin", "none"] as const;

const tracesExporters = z.string().transform((value, ctx) => {
  const names = value.split(",").map((s) => s.trim()).filter(Boolean);
  const unknown = names.filter((n) => !(TRACES_EXPORTERS as readonly string[]).includes(n));
  if (unknown.length > 0) {
    ctx.addIssue({ code: "custom", message: `unknown trace exporter ${unknown.join(", ")}; known: ${TRACES_EXPORTERS.join(", ")}` });
    return z.NEVER;
  }
  return names;
});

/**
 * The standard OpenTelemetry variables that decide whether this process traces. The SDK
 * reads the rest of the OTEL_* family (headers, protocol, sampler, resource attributes)
 * itself, by their standard meaning.
 */
export const tracingEnvSchema = z.object({
  /** OTLP collector base URL (`http://collector:4318`); setting it turns tracing on. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/, message: "must be a URL like http://collector:4318" }).optional(),
  /** Where spans go: `otlp`, `console`, `zipkin` or `none`; setting it (to anything but `none`) turns tracing on. */
  OTEL_TRACES_EXPORTER: tracesExporters.optional(),
  /** `service.name` of this process's spans. Default `nahida`. */
  OTEL_SERVICE_NAME: z.string().min(1).default("nahida"),
  /** `true` turns tracing off whatever else is set (the SDK's standard kill switch). */
  OTEL_SDK_DISABLED: z.enum(["true", "false"]).optional(),
});

/** Tracing is off unless an exporter or a collector is named. */
export function tracingOn(env: z.infer<typeof tracingEnvSchema>): boolean {
  if (env.OTEL_SDK_DISABLED === "true") return false;
  if (env.OTEL_TRACES_EXPORTER) return env.OTEL_TRACES_EXPORTER.some((name) => name !== "none");
  return env.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined;
}
