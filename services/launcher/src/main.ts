import { parseEnv } from "@nahida/config";
import { tracingEnvSchema, tracingOn } from "./tracing.env";

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
await launch(tracing);
