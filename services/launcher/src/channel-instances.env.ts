import type { EnvIssue } from "@nahida/config";
import type { ChannelInstance, ChannelModule } from "@nahida/channels";
import { isChannelName } from "@nahida/contracts";

/** The prefix of an instance's variables: `telegram` → `TELEGRAM_`, `eu-support` → `EU_SUPPORT_`. */
export function instanceEnvPrefix(name: string): string {
  return `${name.toUpperCase().replaceAll("-", "_")}_`;
}

export type IngressServiceName = `ingress-${string}`;

/** The service that runs the ingress of every instance of a kind. */
export const ingressServiceName = (kind: string): IngressServiceName => `ingress-${kind}`;

export const ingressKind = (service: IngressServiceName): string => service.slice("ingress-".length);

interface Wanted {
  name: string;
  module: ChannelModule;
  /** What to say when the instance's required variable is missing. */
  requiredBecause: string;
}

/** `name[:kind]` entries of NAHIDA_CHANNELS; bad entries become issues and are left out. */
function declaredInstances(list: string, modules: readonly ChannelModule[], issues: EnvIssue[]): Wanted[] {
  const issue = (message: string) => issues.push({ variable: "NAHIDA_CHANNELS", message });
  const entries = list.split(",").map((s) => s.trim()).filter(Boolean);
  if (entries.length === 0) issue("lists no channel; expected name[:kind],...");
  const wanted: Wanted[] = [];
  const prefixes = new Map<string, string>();
  for (const entry of entries) {
    const [name = "", kind = name, ...rest] = entry.split(":").map((s) => s.trim());
    const module = modules.find((m) => m.kind === kind);
    if (rest.length > 0) issue(`${JSON.stringify(entry)} is not name[:kind]`);
    else if (!isChannelName(name)) issue(`channel name ${JSON.stringify(name)} must match [a-z][a-z0-9_-]*`);
    else if (!module) issue(`unknown kind ${JSON.stringify(kind)} of channel ${name}; known: ${modules.map((m) => m.kind).join(", ")}`);
    else if (prefixes.has(instanceEnvPrefix(name))) {
      const other = prefixes.get(instanceEnvPrefix(name))!;
      issue(other === name ? `channel ${name} is listed twice` : `channels ${other} and ${name} would both read ${instanceEnvPrefix(name)}*`);
    } else {
      prefixes.set(instanceEnvPrefix(name), name);
      wanted.push({ name, module, requiredBecause: `is required for channel ${name} in NAHIDA_CHANNELS` });
    }
  }
  return wanted;
}

export interface ChannelInstancesOptions {
  modules: readonly ChannelModule[];
  /** The cleaned environment (no empty values). */
  env: Readonly<Record<string, string | undefined>>;
  /** NAHIDA_SERVICES as given, if it was valid: an `ingress-<kind>` there needs an instance of that kind. */
  services?: readonly string[];
}

/**
 * The channel instances of this deployment: those NAHIDA_CHANNELS names, or without it each
 * module's default instance when its required variable is set (or its ingress is asked for).
 * Each instance's variables are the module's schema read under the instance prefix; every
 * bad one is reported, named as the operator sets it.
 */
export function resolveChannelInstances(o: ChannelInstancesOptions): { channels: ChannelInstance[]; issues: EnvIssue[] } {
  const issues: EnvIssue[] = [];
  const asksFor = (kind: string) => o.services?.includes(ingressServiceName(kind)) ?? false;
  const list = o.env.NAHIDA_CHANNELS;
  const wanted =
    list !== undefined
      ? declaredInstances(list, o.modules, issues)
      : o.modules
          .filter((m) => o.env[instanceEnvPrefix(m.defaultInstance) + m.requiredVariable] !== undefined || asksFor(m.kind))
          .map((m) => ({ name: m.defaultInstance, module: m, requiredBecause: `is required to run ${ingressServiceName(m.kind)}` }));

  const channels: ChannelInstance[] = [];
  for (const { name, module, requiredBecause } of wanted) {
    const prefix = instanceEnvPrefix(name);
    const variables = Object.fromEntries(
      Object.entries(o.env).flatMap(([key, value]) => (key.startsWith(prefix) ? [[key.slice(prefix.length), value]] : [])),
    );
    const missing = variables[module.requiredVariable] === undefined;
    if (missing) issues.push({ variable: prefix + module.requiredVariable, message: requiredBecause });
    const parsed = module.envSchema.safeParse(variables);
    if (parsed.success) {
      if (!missing) channels.push({ name, kind: module.kind, config: parsed.data });
      continue;
    }
    for (const issue of parsed.error.issues) {
      const variable = String(issue.path[0] ?? module.requiredVariable);
      if (!(missing && variable === module.requiredVariable)) issues.push({ variable: prefix + variable, message: issue.message });
    }
  }

  for (const module of o.modules) {
    const ofKind = channels.filter((c) => c.kind === module.kind);
    if (list !== undefined && ofKind.length === 0 && asksFor(module.kind) && !wanted.some((w) => w.module === module)) {
      issues.push({ variable: "NAHIDA_SERVICES", message: `${ingressServiceName(module.kind)} has nothing to run: NAHIDA_CHANNELS names no channel of kind ${module.kind}` });
    }
    issues.push(...(module.validate?.(ofKind, (instance, variable) => instanceEnvPrefix(instance.name) + variable) ?? []));
  }
  return { channels, issues };
}
