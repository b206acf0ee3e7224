import { parseEnv } from "@nahida/config";
import { tracingEnvSchema, tracingOn } from "./tracing.env";

// First of all: a SIGTERM or SIGINT that comes while the process is still starting (loading
// modules, waiting for Postgres) is kept, and acted on once it can be (launch.ts): without a
// handler Node would die by the signal instead of exiting 0.
const early: { signal: NodeJS.Signals | null; onSignal?: (signal: NodeJS.Signals) => void } = { signal: null };
const keep = (signal: NodeJS.Signals) => {
  early.signal ??= signal;
  early.onSignal?.(signal);
};
process.on("SIGTERM", keep);
process.on("SIGINT", keep);

// Tracing starts before any service module is imported: instrumentations patch pg, ioredis
// and http as those are first loaded. When it is off the SDK is never even loaded. A bad
// OTEL_* variable is reported by the launcher below, with every other bad variable.
const tracingEnv = parseEnv(tracingEnvSchema, process.env);
let tracing = null;
if (tracingEnv.ok && tracingOn(tracingEnv.value)) {
  const { registerTracingHooks, startTracing } = await import("./tracing");
  await registerTracingHooks();
  tracing = startTracing({ serviceName: tracingEnv.value.OTEL_SERVICE_NAME });
}
const { launch } = await import("./launch");
await launch(tracing, { early, handlers: [keep] });
