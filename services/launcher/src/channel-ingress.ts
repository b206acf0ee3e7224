import { isChannelStartError, type ChannelIngressDeps, type ChannelInstance, type ChannelModule, type RunningChannelIngress } from "@nahida/channels";
import type { Readiness } from "@nahida/contracts";
import { ingressKind, instanceEnvPrefix, type IngressServiceName } from "./channel-instances.env";
import { PreflightError } from "./preflight";

/**
 * Starts the ingress of every instance of the service's kind: all of them or, when one
 * fails, none. A failure a variable explains becomes a {@link PreflightError} naming it as
 * the operator set it (`SUPPORT_BOT_TOKEN`).
 */
export async function startChannelIngress(
  service: IngressServiceName,
  module: ChannelModule,
  instances: readonly ChannelInstance[],
  deps: ChannelIngressDeps,
): Promise<{ stop(): Promise<void>; readiness(): Promise<Readiness> }> {
  const kind = ingressKind(service);
  const startInstance = module.startIngress?.bind(module);
  if (!startInstance) throw new Error(`channel kind ${kind} has no ingress service`);
  const started: RunningChannelIngress[] = [];
  const names: string[] = [];
  const stop = async () => {
    await Promise.all(started.map((ingress) => ingress.stop()));
  };
  for (const instance of instances.filter((c) => c.kind === kind)) {
    try {
      const ingress = await startInstance(instance, deps);
      started.push(ingress);
      names.push(instance.name);
      const details = Object.entries(ingress.describe ?? {}).filter(([, value]) => value !== undefined);
      deps.logger.info(
        { channel: instance.name, kind, ...ingress.describe },
        `${service}: ${instance.name}${instance.name === kind ? "" : ` (${kind})`}${details.map(([key, value]) => ` · ${key} ${value}`).join("")}`,
      );
    } catch (error) {
      await stop().catch(() => undefined);
      if (isChannelStartError(error)) throw new PreflightError(instanceEnvPrefix(instance.name) + error.variable, error.message);
      throw error;
    }
  }
  // Ready when every instance is; the first that is not names itself.
  const readiness = async (): Promise<Readiness> => {
    for (const [index, ingress] of started.entries()) {
      const state = (await ingress.readiness?.()) ?? { ok: true };
      if (!state.ok) return { ok: false, reason: `${names[index]}: ${state.reason}` };
    }
    return { ok: true };
  };
  return { stop, readiness };
}
