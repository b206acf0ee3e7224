import { z } from "zod";
import { baseEnvSchema, port, positiveMs } from "@nahida/config";
import { agentWorkerEnvSchema } from "@nahida/agent-worker";
import { gatewayEnvSchema } from "@nahida/gateway";
import { schedulerEnvSchema } from "@nahida/scheduler";
import { CHANNEL_MODULES } from "./channel-modules";
import { ingressServiceName, resolveChannelInstances, type IngressServiceName } from "./channel-instances.env";
import { tracingEnvSchema, tracingOn } from "./tracing.env";

export type ServiceName = "gateway" | "agent-worker" | "delivery" | "scheduler" | IngressServiceName;

export const isIngressService = (name: ServiceName): name is IngressServiceName => name.startsWith("ingress-");

/** Every service this process can run, in start order; NAHIDA_SERVICES picks a subset. */
export const SERVICE_NAMES: readonly ServiceName[] = [
  "gateway",
  ...CHANNEL_MODULES.map((m) => ingressServiceName(m.kind)),
  "scheduler",
  "agent-worker",
  "delivery",
];

const serviceList = z.string().transform((value, ctx) => {
  const names = value.split(",").map((s) => s.trim()).filter(Boolean);
  const unknown = names.filter((n) => !(SERVICE_NAMES as readonly string[]).includes(n));
  if (unknown.length > 0 || names.length === 0) {
    ctx.addIssue({
      code: "custom",
      message: `unknown service ${unknown.join(", ") || "(empty list)"}; known: ${SERVICE_NAMES.join(", ")}`,
    });
    return z.NEVER;
  }
  return [...new Set(names)] as ServiceName[];
});

/** The variables of fixed names; channel instances add their prefixed ones. */
const fixedEnvSchema = z.object({
  ...baseEnvSchema.shape,
  ...gatewayEnvSchema.shape,
  ...agentWorkerEnvSchema.shape,
  ...schedulerEnvSchema.shape,
  ...tracingEnvSchema.shape,
  /** Default: every service that is configured (`ingress-<kind>` needs an instance of that kind). */
  NAHIDA_SERVICES: serviceList.optional(),
  /** Platform sends running at the same time in one delivery process. */
  DELIVERY_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
  /** How long a delivery waits, from its creation, while its platform refuses every send (a logged-out Milky account) before it fails. Default 1 hour. */
  DELIVERY_UNAVAILABLE_MAX_WAIT_MS: positiveMs.optional(),
  /** The probe listener (`/health`, `/ready`) of this process; off unless set. */
  NAHIDA_HEALTH_PORT: port.optional(),
  /** Where the probe listener listens (`0.0.0.0` in containers, so the orchestrator reaches it). */
  NAHIDA_HEALTH_HOST: z.string().min(1).default("127.0.0.1"),
  /** How long SIGTERM waits for running work before exiting anyway. */
  NAHIDA_SHUTDOWN_TIMEOUT_MS: positiveMs.default(25_000),
});

/**
 * The whole launcher environment. Channel variables have instance-dependent names
 * (NAHIDA_CHANNELS), so the record is read as a whole and both parts are checked even when
 * the other fails: every bad variable is reported at once.
 */
export const launcherEnvSchema = z.record(z.string(), z.string()).transform((raw, ctx) => {
  const fixed = fixedEnvSchema.safeParse(raw);
  for (const issue of fixed.error?.issues ?? []) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
  const services = serviceList.safeParse(raw.NAHIDA_SERVICES).data;
  const { channels, issues } = resolveChannelInstances({ modules: CHANNEL_MODULES, env: raw, ...(services ? { services } : {}) });
  for (const issue of issues) ctx.addIssue({ code: "custom", path: [issue.variable], message: issue.message });
  if (!fixed.success || issues.length > 0) return z.NEVER;
  const hasInstance = (service: ServiceName) => !isIngressService(service) || channels.some((c) => ingressServiceName(c.kind) === service);
  return {
    ...fixed.data,
    NAHIDA_SERVICES: fixed.data.NAHIDA_SERVICES ?? SERVICE_NAMES.filter(hasInstance),
    /** Whether this process traces (OTEL_TRACES_EXPORTER or OTEL_EXPORTER_OTLP_ENDPOINT set); the launcher starts the SDK then. */
    tracing: tracingOn(fixed.data),
    /** The channel instances, in NAHIDA_CHANNELS order; their names are the channels of ChatAddresses. */
    channels,
  };
});
export type LauncherEnv = z.infer<typeof launcherEnvSchema>;
