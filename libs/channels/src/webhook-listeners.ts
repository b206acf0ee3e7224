import type { ChannelConfigIssue, ChannelInstance } from "./channel-module";

const WILDCARD_HOSTS = new Set(["0.0.0.0", "::"]);

/** Where an instance's webhook receiver listens. */
export interface WebhookListener {
  host: string;
  port: number;
}

/**
 * One issue for each instance whose webhook receiver would listen where an earlier one
 * already does (the same port on the same host, or on a wildcard host), named by
 * `portVariable`: two receivers cannot share a port.
 */
export function webhookPortClashes<Config>(
  instances: readonly ChannelInstance<Config>[],
  listener: (config: Config) => WebhookListener,
  variable: (instance: ChannelInstance<Config>, name: string) => string,
  portVariable: string,
  kindOfInstance: string,
): ChannelConfigIssue[] {
  const issues: ChannelConfigIssue[] = [];
  const seen: { instance: ChannelInstance<Config>; at: WebhookListener }[] = [];
  for (const instance of instances) {
    const at = listener(instance.config);
    const taken = seen.find((s) => s.at.port === at.port && (s.at.host === at.host || WILDCARD_HOSTS.has(s.at.host) || WILDCARD_HOSTS.has(at.host)));
    if (taken) {
      issues.push({ variable: variable(instance, portVariable), message: `${at.port} is taken by ${variable(taken.instance, portVariable)}; each webhook ${kindOfInstance} needs its own port` });
    }
    seen.push({ instance, at });
  }
  return issues;
}
