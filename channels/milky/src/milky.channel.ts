import { webhookPortClashes, type ChannelConfigIssue, type ChannelInstance, type ChannelModule } from "@nahida/channels";
import { normalizeMilkyBaseUrl } from "./milky-api.client";
import { startMilkyIngress } from "./milky-ingress.service";
import { milkyEnvSchema, type MilkyEnv } from "./milky.env";
import { DEFAULT_MILKY_CHANNEL } from "./milky.normalizer";
import { MilkySender } from "./milky.sender";

/** QQ accounts through Milky implementations, any number of them: each instance is one implementation's account. */
export const milkyChannel: ChannelModule<MilkyEnv> = {
  kind: "milky",
  defaultInstance: DEFAULT_MILKY_CHANNEL,
  envSchema: milkyEnvSchema,
  requiredVariable: "BASE_URL",

  validate(instances, variable) {
    const issues: ChannelConfigIssue[] = [];
    const byUrl = new Map<string, ChannelInstance<MilkyEnv>>();
    const webhooks: ChannelInstance<MilkyEnv>[] = [];
    for (const instance of instances) {
      const c = instance.config;
      // Two instances of one implementation would both store every event, each under its own channel.
      const url = normalizeMilkyBaseUrl(c.BASE_URL);
      const same = byUrl.get(url);
      if (same) issues.push({ variable: variable(instance, "BASE_URL"), message: `is the same Milky implementation as ${variable(same, "BASE_URL")}` });
      else byUrl.set(url, instance);
      if (c.EVENT_TRANSPORT !== "webhook") continue;
      if (!c.ACCESS_TOKEN) issues.push({ variable: variable(instance, "ACCESS_TOKEN"), message: `is required when ${variable(instance, "EVENT_TRANSPORT")}=webhook (pushes are checked against it)` });
      webhooks.push(instance);
    }
    issues.push(...webhookPortClashes(webhooks, (c) => ({ host: c.WEBHOOK_HOST, port: c.WEBHOOK_PORT }), variable, "WEBHOOK_PORT", "account"));
    return issues;
  },

  createSender(instance, deps) {
    const c = instance.config;
    return new MilkySender({
      baseUrl: c.BASE_URL,
      channel: instance.name,
      localFiles: c.LOCAL_FILES,
      ...(c.ACCESS_TOKEN ? { accessToken: c.ACCESS_TOKEN } : {}),
      ...(deps.workspaceDir ? { workspaceDir: deps.workspaceDir } : {}),
    });
  },

  async startIngress(instance, deps) {
    const c = instance.config;
    const ingress = await startMilkyIngress({
      intake: deps.intake,
      baseUrl: c.BASE_URL,
      ...(c.ACCESS_TOKEN ? { accessToken: c.ACCESS_TOKEN } : {}),
      transport: c.EVENT_TRANSPORT,
      channel: instance.name,
      redis: deps.redis,
      prefix: deps.prefix,
      logger: deps.logger,
      leaderTtlMs: deps.leadershipTtlMs,
      webhook: { host: c.WEBHOOK_HOST, port: c.WEBHOOK_PORT, bodyLimitBytes: deps.bodyLimitBytes, ...(c.WEBHOOK_PATH ? { path: c.WEBHOOK_PATH } : {}) },
    });
    return { stop: ingress.stop, readiness: ingress.readiness, describe: { account: ingress.selfId, transport: c.EVENT_TRANSPORT, webhook: ingress.webhookAddress } };
  },
};
