import { createHash, randomUUID } from "node:crypto";
import { hostname } from "node:os";
import Fastify, { type FastifyBaseLogger } from "fastify";
import { Api, GrammyError } from "grammy";
import type { Cluster, Redis } from "ioredis";
import { ChannelStartError } from "@nahida/channels";
import { isChannelName, recoveryTimings, type Readiness } from "@nahida/contracts";
import { errorHandlerPlugin, jsonBodyPlugin, serverOptions } from "@nahida/http";
import type { Intake } from "@nahida/ingress";
import type { Logger } from "@nahida/observability";
import { RedisLeadership } from "@nahida/queue";
import { ChatAdminsCache } from "./chat-admins.cache";
import { TelegramPoller } from "./telegram-poller";
import { TELEGRAM_ALLOWED_UPDATES, createTelegramUpdateHandler } from "./telegram-update.handler";
import { telegramWebhookRoute } from "./telegram-webhook.route";
import { DEFAULT_TELEGRAM_CHANNEL, type TelegramBotIdentity } from "./telegram.normalizer";

export interface TelegramIngressOptions {
  /** Where updates are stored and queued (`createIntake`). */
  intake: Intake;
  token: string;
  apiRoot: string;
  mode: "polling" | "webhook";
  /**
   * The instance name: the ChatAddress channel of this bot's chats, and the scope of its
   * de-duplication. Give each bot of a deployment its own. Default `telegram`.
   */
  channel?: string;
  redis: Redis | Cluster;
  /** Queue prefix; namespaces the poller lock and offset in Redis. */
  prefix: string;
  logger: Logger;
  pollTimeoutSeconds?: number;
  /** Poller lease; a dead leader is replaced after at most this long. */
  leaderTtlMs?: number;
  /** `path` defaults to `/<channel>/webhook`. */
  webhook?: { host: string; port: number; secret: string; path?: string; publicUrl?: string; bodyLimitBytes?: number };
}

export interface RunningTelegramIngress {
  bot: TelegramBotIdentity;
  /** Where the webhook listens (webhook mode). */
  webhookAddress?: string;
  poller?: TelegramPoller;
  /** Polling: the poller's ({@link TelegramPoller.readiness}); webhook: while the receiver listens. */
  readiness(): Promise<Readiness>;
  stop(): Promise<void>;
}

async function whoAmI(api: Api): Promise<TelegramBotIdentity> {
  try {
    const me = await api.getMe();
    return { id: me.id, username: me.username };
  } catch (error) {
    if (error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404)) {
      throw new ChannelStartError("BOT_TOKEN", `Telegram rejected the bot token (${error.error_code} ${error.description})`);
    }
    throw new ChannelStartError("API_ROOT", `cannot reach the Telegram Bot API: ${(error as Error).message}`);
  }
}

export async function startTelegramIngress(o: TelegramIngressOptions): Promise<RunningTelegramIngress> {
  const channel = o.channel ?? DEFAULT_TELEGRAM_CHANNEL;
  // Otherwise every update would be ignored for its unparseable chat address.
  if (!isChannelName(channel)) {
    throw new RangeError(`Telegram channel name ${JSON.stringify(channel)} must match [a-z][a-z0-9_-]*`);
  }
  const api = new Api(o.token, { apiRoot: o.apiRoot });
  const bot = await whoAmI(api);
  const logger = o.logger.child({ bot: bot.username, channel });
  const acceptUpdate = createTelegramUpdateHandler({ bot, channel, intake: o.intake, admins: new ChatAdminsCache(api) });

  if (o.mode === "polling") {
    // Keyed by a hash of the token: one poller per bot, and no token in Redis keys.
    const tokenId = createHash("sha256").update(o.token).digest("hex").slice(0, 16);
    const poller = new TelegramPoller({
      api,
      leadership: new RedisLeadership(
        o.redis,
        `${o.prefix}:telegram:poller:${tokenId}`,
        `${hostname()}:${process.pid}:${randomUUID()}`,
        o.leaderTtlMs ?? recoveryTimings().leadershipTtlMs,
      ),
      redis: o.redis,
      offsetKey: `${o.prefix}:telegram:offset:${tokenId}`,
      acceptUpdate,
      pollTimeoutSeconds: o.pollTimeoutSeconds ?? 25,
      logger,
    });
    poller.start();
    return { bot, poller, readiness: () => poller.readiness(), stop: () => poller.stop() };
  }

  if (!o.webhook) throw new ChannelStartError("WEBHOOK_SECRET", "webhook mode needs a webhook secret");
  const webhook = o.webhook;
  const server = Fastify(serverOptions({ logger: logger.child({ scope: "telegram-webhook" }) as unknown as FastifyBaseLogger, bodyLimitBytes: webhook.bodyLimitBytes ?? 1024 * 1024 }));
  // The gateway's error shape: 4xx keep their message, 5xx are logged and hidden (a 500
  // makes Telegram deliver the update again).
  await server.register(errorHandlerPlugin);
  await server.register(jsonBodyPlugin);
  await server.register(telegramWebhookRoute, { path: webhook.path ?? `/${channel}/webhook`, secret: webhook.secret, acceptUpdate, logger });
  const address = await server.listen({ host: webhook.host, port: webhook.port });
  if (webhook.publicUrl) {
    await api.setWebhook(webhook.publicUrl, {
      secret_token: webhook.secret,
      allowed_updates: [...TELEGRAM_ALLOWED_UPDATES],
    });
    logger.info({ url: webhook.publicUrl }, "telegram webhook registered");
  }
  return {
    bot,
    webhookAddress: address,
    readiness: async () => (server.server.listening ? { ok: true } : { ok: false, reason: "the webhook receiver is not listening" }),
    stop: () => server.close(),
  };
}
