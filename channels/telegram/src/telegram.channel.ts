import { webhookPortClashes, type ChannelConfigIssue, type ChannelInstance, type ChannelModule } from "@nahida/channels";
import { startTelegramIngress } from "./telegram-ingress.service";
import { telegramEnvSchema, type TelegramEnv } from "./telegram.env";
import { DEFAULT_TELEGRAM_CHANNEL } from "./telegram.normalizer";
import { TelegramSender } from "./telegram.sender";

/** Telegram bots, any number of them: each instance is one bot token. */
export const telegramChannel: ChannelModule<TelegramEnv> = {
  kind: "telegram",
  defaultInstance: DEFAULT_TELEGRAM_CHANNEL,
  envSchema: telegramEnvSchema,
  requiredVariable: "BOT_TOKEN",

  validate(instances, variable) {
    const issues: ChannelConfigIssue[] = [];
    const byToken = new Map<string, ChannelInstance<TelegramEnv>>();
    const webhooks: ChannelInstance<TelegramEnv>[] = [];
    for (const instance of instances) {
      const c = instance.config;
      // Both would share one poller lock (it is keyed by the token), so one of them would
      // silently receive the other's updates.
      const sameBot = byToken.get(c.BOT_TOKEN);
      if (sameBot) issues.push({ variable: variable(instance, "BOT_TOKEN"), message: `is the same bot as ${variable(sameBot, "BOT_TOKEN")}` });
      else byToken.set(c.BOT_TOKEN, instance);
      if (c.MODE !== "webhook") continue;
      if (!c.WEBHOOK_SECRET) {
        issues.push({ variable: variable(instance, "WEBHOOK_SECRET"), message: `is required when ${variable(instance, "MODE")}=webhook` });
      }
      webhooks.push(instance);
    }
    issues.push(...webhookPortClashes(webhooks, (c) => ({ host: c.WEBHOOK_HOST, port: c.WEBHOOK_PORT }), variable, "WEBHOOK_PORT", "bot"));
    return issues;
  },

  createSender(instance, deps) {
    return new TelegramSender({
      token: instance.config.BOT_TOKEN,
      apiRoot: instance.config.API_ROOT,
      channel: instance.name,
      ...(deps.workspaceDir ? { workspaceDir: deps.workspaceDir } : {}),
    });
  },

  async startIngress(instance, deps) {
    const c = instance.config;
    const ingress = await startTelegramIngress({
      token: c.BOT_TOKEN,
      apiRoot: c.API_ROOT,
      mode: c.MODE,
      channel: instance.name,
      intake: deps.intake,
      redis: deps.redis,
      prefix: deps.prefix,
      logger: deps.logger,
      pollTimeoutSeconds: c.POLL_TIMEOUT_SECONDS,
      leaderTtlMs: deps.leadershipTtlMs,
      ...(c.WEBHOOK_SECRET
        ? {
            webhook: {
              host: c.WEBHOOK_HOST,
              port: c.WEBHOOK_PORT,
              secret: c.WEBHOOK_SECRET,
              bodyLimitBytes: deps.bodyLimitBytes,
              ...(c.WEBHOOK_URL ? { publicUrl: c.WEBHOOK_URL } : {}),
            },
          }
        : {}),
    });
    return { stop: ingress.stop, readiness: ingress.readiness, describe: { bot: ingress.bot.username, mode: c.MODE, webhook: ingress.webhookAddress } };
  },
};
