import { createRequire } from "node:module";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { baseEnvSchema, cleanEnv, migrationDatabase, parseEnv, port, positiveMs, type EnvIssue } from "@nahida/config";
import { agentWorkerEnvSchema } from "@nahida/agent-worker";
import type { ChannelModule } from "@nahida/channels";
import { DEFAULT_DEDUPE_WINDOW_MS, err, ok, type Result } from "@nahida/contracts";
import { gatewayEnvSchema } from "@nahida/gateway";
import { loadPlugins, type LoadedPlugins, type PluginEntry } from "@nahida/plugins";
import type { RedisTarget } from "@nahida/queue";
import { schedulerEnvSchema } from "@nahida/scheduler";
import { ingressServiceName, instanceEnvPrefix, resolveChannelInstances, type IngressServiceName } from "./channel-instances.env";
import { tracingEnvSchema, tracingOn } from "./tracing.env";
import { importPluginEntry } from "./plugin-import";

export type ServiceName = "gateway" | "agent-worker" | "delivery" | "scheduler" | IngressServiceName;

export const isIngressService = (name: ServiceName): name is IngressServiceName => name.startsWith("ingress-");

/** Every service this process can run with these channel kinds, in start order; NAHIDA_SERVICES picks a subset. */
export function serviceNames(modules: readonly ChannelModule[]): ServiceName[] {
  return ["gateway", ...modules.filter((m) => m.startIngress).map((m) => ingressServiceName(m.kind)), "scheduler", "agent-worker", "delivery"];
}

const serviceList = (known: readonly ServiceName[]) =>
  z.string().transform((value, ctx) => {
    const names = value.split(",").map((s) => s.trim()).filter(Boolean);
    const unknown = names.filter((n) => !(known as readonly string[]).includes(n));
    if (unknown.length > 0 || names.length === 0) {
      ctx.addIssue({
        code: "custom",
        message: `unknown service ${unknown.join(", ") || "(empty list)"}; known: ${known.join(", ")}`,
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
  /** Default: every service that is configured (`ingress-<kind>` needs an instance of that kind); checked against the plugins' channel kinds. */
  NAHIDA_SERVICES: z.string().optional(),
  /** Plugins beyond the bundled ones: npm package names or directories (`./plugins/weather`), comma-separated. */
  NAHIDA_PLUGINS: z.string().optional(),
  /** `name[:kind]` channel instances, comma-separated; read (and checked) by resolveChannelInstances. */
  NAHIDA_CHANNELS: z.string().optional(),
  /** Platform sends running at the same time in one delivery process. */
  DELIVERY_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
  /** How long a delivery waits, from its creation, while its platform refuses every send (a logged-out Milky account) before it fails. Default 1 hour. */
  DELIVERY_UNAVAILABLE_MAX_WAIT_MS: positiveMs.optional(),
  /** The probe listener (`/health`, `/ready`) of this process; off unless set. */
  NAHIDA_HEALTH_PORT: port.optional(),
  /** Where the probe listener listens (`0.0.0.0` in containers, so the orchestrator reaches it). */
  NAHIDA_HEALTH_HOST: z.string().min(1).default("127.0.0.1"),
  /** How long a platform event's identity (a Telegram update_id) counts as a duplicate; older, the same identity is a new event. */
  NAHIDA_DEDUPE_WINDOW_MS: positiveMs
    .min(3_600_000, "must be at least an hour (3600000): platforms redeliver for that long and more")
    .max(30 * 86_400_000, "must be at most 30 days (2592000000)")
    .default(DEFAULT_DEDUPE_WINDOW_MS),
  /** How long SIGTERM waits for running work before exiting anyway. */
  NAHIDA_SHUTDOWN_TIMEOUT_MS: positiveMs.default(25_000),
});

const REDIS_WAYS = ["REDIS_URL", "REDIS_SENTINELS", "REDIS_CLUSTER_NODES"] as const;

/**
 * Redis is one server (REDIS_URL), a Sentinel group (REDIS_SENTINELS) or a cluster
 * (REDIS_CLUSTER_NODES), one of them; credentials by variable only for the last two.
 */
function redisIssues(raw: Record<string, string>): EnvIssue[] {
  const set = REDIS_WAYS.filter((name) => raw[name] !== undefined);
  if (set.length > 1) return [{ variable: set.at(-1)!, message: `set one of ${REDIS_WAYS.join(", ")}, not ${set.join(" and ")}` }];
  const only = (names: string[], message: string) => names.filter((name) => raw[name] !== undefined).map((variable) => ({ variable, message }));
  return [
    ...(set[0] === "REDIS_SENTINELS" ? [] : only(["REDIS_SENTINEL_NAME", "REDIS_SENTINEL_USERNAME", "REDIS_SENTINEL_PASSWORD"], "is read only with REDIS_SENTINELS")),
    ...(set.length === 0 || set[0] === "REDIS_URL"
      ? only(["REDIS_USERNAME", "REDIS_PASSWORD"], "is read only with REDIS_SENTINELS or REDIS_CLUSTER_NODES (with REDIS_URL, credentials go in the URL: redis://user:password@host:6379)")
      : []),
  ];
}

function redisTarget(env: z.infer<typeof fixedEnvSchema>): RedisTarget {
  const credentials = { ...(env.REDIS_USERNAME ? { username: env.REDIS_USERNAME } : {}), ...(env.REDIS_PASSWORD ? { password: env.REDIS_PASSWORD } : {}) };
  if (env.REDIS_CLUSTER_NODES) return { kind: "cluster", nodes: env.REDIS_CLUSTER_NODES, ...credentials };
  if (!env.REDIS_SENTINELS) return { kind: "url", url: env.REDIS_URL };
  return {
    kind: "sentinel",
    sentinels: env.REDIS_SENTINELS,
    name: env.REDIS_SENTINEL_NAME,
    ...credentials,
    ...(env.REDIS_SENTINEL_USERNAME ? { sentinelUsername: env.REDIS_SENTINEL_USERNAME } : {}),
    ...(env.REDIS_SENTINEL_PASSWORD ? { sentinelPassword: env.REDIS_SENTINEL_PASSWORD } : {}),
  };
}

/**
 * The whole launcher environment for these channel kinds. Channel variables have
 * instance-dependent names (NAHIDA_CHANNELS), so the record is read as a whole and both
 * parts are checked even when the other fails: every bad variable is reported at once.
 */
export function launcherEnvSchema(modules: readonly ChannelModule[]) {
  const known = serviceNames(modules);
  return z.record(z.string(), z.string()).transform((raw, ctx) => {
    const fixed = fixedEnvSchema.safeParse(raw);
    for (const issue of fixed.error?.issues ?? []) ctx.addIssue({ code: "custom", path: issue.path, message: issue.message });
    const listed = raw.NAHIDA_SERVICES === undefined ? undefined : serviceList(known).safeParse(raw.NAHIDA_SERVICES);
    for (const issue of listed?.error?.issues ?? []) ctx.addIssue({ code: "custom", path: ["NAHIDA_SERVICES"], message: issue.message });
    const services = listed?.data;
    const { channels, issues } = resolveChannelInstances({ modules, env: raw, ...(services ? { services } : {}) });
    for (const issue of issues) ctx.addIssue({ code: "custom", path: [issue.variable], message: issue.message });
    // Deleting an inbound message forgets its platform identity: a redelivery of it within
    // the dedupe window would then be taken for a new message.
    const f = fixed.data;
    const crossIssues: EnvIssue[] = redisIssues(raw);
    if (f && f.NAHIDA_RETENTION_INBOUND_DAYS !== 0 && f.NAHIDA_RETENTION_INBOUND_DAYS * 86_400_000 < f.NAHIDA_DEDUPE_WINDOW_MS) {
      crossIssues.push({ variable: "NAHIDA_RETENTION_INBOUND_DAYS", message: `must keep inbound messages at least as long as NAHIDA_DEDUPE_WINDOW_MS (${f.NAHIDA_DEDUPE_WINDOW_MS} ms), or 0` });
    }
    const migrations = f ? migrationDatabase(f) : undefined;
    if (migrations?.ok === false) crossIssues.push(migrations.error);
    for (const issue of crossIssues) ctx.addIssue({ code: "custom", path: [issue.variable], message: issue.message });
    if (!fixed.success || !migrations?.ok || listed?.success === false || issues.length > 0 || crossIssues.length > 0) return z.NEVER;
    const hasInstance = (service: ServiceName) => !isIngressService(service) || channels.some((c) => ingressServiceName(c.kind) === service);
    return {
      ...fixed.data,
      NAHIDA_SERVICES: services ?? known.filter(hasInstance),
      /** Whether this process traces (OTEL_TRACES_EXPORTER or OTEL_EXPORTER_OTLP_ENDPOINT set); the launcher starts the SDK then. */
      tracing: tracingOn(fixed.data),
      /** The channel instances, in NAHIDA_CHANNELS order; their names are the channels of ChatAddresses. */
      channels,
      /** Where the migrations go: DATABASE_DIRECT_URL, else DATABASE_URL. */
      migrations: migrations.value,
      /** Where Redis is: REDIS_URL, the master REDIS_SENTINELS name, or the cluster of REDIS_CLUSTER_NODES. */
      redis: redisTarget(fixed.data),
    };
  });
}

/**
 * Every variable the launcher reads, by name, with these plugins: the fixed ones, those of
 * each channel kind's default instance (another instance's are `<INSTANCE>_*`), and each
 * plugin's config. Deployment files are checked against it (test/deploy).
 */
export function launcherVariables(plugins: LoadedPlugins): Set<string> {
  const names = new Set(Object.keys(fixedEnvSchema.shape));
  for (const module of plugins.channels()) {
    const prefix = instanceEnvPrefix(module.defaultInstance);
    for (const key of Object.keys((module.envSchema as unknown as { shape?: object }).shape ?? {})) names.add(prefix + key);
  }
  for (const plugin of plugins.plugins) for (const name of plugin.configVariables) names.add(name);
  return names;
}

export type LauncherEnv = z.infer<ReturnType<typeof launcherEnvSchema>> & {
  /** The loaded plugins: every tool, command and channel kind of this deployment. */
  plugins: LoadedPlugins;
};

const launcherPackage = createRequire(import.meta.url)("../package.json") as { version: string };

/** The host version plugins' `nahida` ranges are checked against. */
export const HOST_VERSION = launcherPackage.version;

/**
 * The plugins shipped with the host, resolved from this package. Their code is imported here
 * by name (each one's plugin.yaml `entry`), so the build takes it into the host's JavaScript;
 * their manifests are still read and checked like any plugin's.
 */
export const BUNDLED_PLUGINS: PluginEntry[] = [
  { spec: "@nahida/plugin-core", envPrefix: "AGENT_", load: () => import("@nahida/plugin-core/src/index") },
  { spec: "@nahida/channel-telegram", load: () => import("@nahida/channel-telegram/src/telegram.plugin") },
  { spec: "@nahida/channel-milky", load: () => import("@nahida/channel-milky/src/milky.plugin") },
  { spec: "@nahida/channel-web", load: () => import("@nahida/channel-web/src/web.plugin") },
].map((p) => ({ ...p, bundled: true, from: dirname(fileURLToPath(import.meta.url)) }));

export interface ReadLauncherEnvOptions {
  /** Where NAHIDA_PLUGINS paths and package names are resolved from (default: the working directory). */
  baseDir?: string;
}

/**
 * Loads the plugins (the bundled ones, then NAHIDA_PLUGINS) and reads the environment with
 * the channel kinds they provide. A plugin refused at start is one line among the bad
 * variables, `NAHIDA_PLUGINS: plugin <id>: <reason>`, and no plugin code has run when a
 * manifest was refused. Channel variables and NAHIDA_SERVICES depend on the plugins' channel
 * kinds, so while a plugin is refused only the fixed variables are checked beside it.
 */
export async function readLauncherEnv(env: Record<string, string | undefined>, options: ReadLauncherEnvOptions = {}): Promise<Result<LauncherEnv, EnvIssue[]>> {
  const cleaned = cleanEnv(env);
  const listed = (cleaned.NAHIDA_PLUGINS ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  const loaded = await loadPlugins({
    entries: [...BUNDLED_PLUGINS, ...listed.map((spec) => ({ spec, bundled: false }))],
    baseDir: options.baseDir ?? process.cwd(),
    env: cleaned,
    hostVersion: HOST_VERSION,
    importModule: importPluginEntry,
    timeZone: cleaned.NAHIDA_TIMEZONE ?? "UTC",
    ...(cleaned.NAHIDA_WORKSPACE_DIR ? { workspaceDir: cleaned.NAHIDA_WORKSPACE_DIR } : {}),
  });
  if (!loaded.ok) {
    const fixed = parseEnv(fixedEnvSchema, cleaned);
    const pluginIssues = loaded.error.map((i) => ({ variable: i.variable ?? "NAHIDA_PLUGINS", message: `plugin ${i.plugin}: ${i.message}` }));
    return err([...(fixed.ok ? [] : fixed.error), ...pluginIssues]);
  }
  const parsed = parseEnv(launcherEnvSchema(loaded.value.channels()), cleaned);
  return parsed.ok ? ok({ ...parsed.value, plugins: loaded.value }) : parsed;
}
