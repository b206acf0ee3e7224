import { createHash, randomUUID } from "node:crypto";
import { hostname } from "node:os";
import Fastify, { type FastifyBaseLogger } from "fastify";
import type { Cluster, Redis } from "ioredis";
import { GetLoginInfoOutput } from "@saltify/milky-types";
import { ChannelStartError } from "@nahida/channels";
import { isChannelName, recoveryTimings, type Readiness } from "@nahida/contracts";
import { errorHandlerPlugin, jsonBodyPlugin, serverOptions } from "@nahida/http";
import type { Intake } from "@nahida/ingress";
import type { Logger } from "@nahida/observability";
import { RedisLeadership } from "@nahida/queue";
import { MilkyApiClient, MilkyApiError, normalizeMilkyBaseUrl } from "./milky-api.client";
import { createMilkyEventHandler } from "./milky-event.handler";
import { MilkyEventStream, type MilkyEventStreamOptions } from "./milky-event-stream";
import { milkyWebhookRoute } from "./milky-webhook.route";
import { DEFAULT_MILKY_CHANNEL } from "./milky.normalizer";

export interface MilkyIngressOptions {
  intake: Intake;
  baseUrl: string;
  accessToken?: string;
  transport: "websocket" | "sse" | "webhook";
  /** The instance name: the ChatAddress channel of this account's chats. Default `milky`. */
  channel?: string;
  redis: Redis | Cluster;
  /** Queue prefix; namespaces the connection lock and the backfill's chat list in Redis. */
  prefix: string;
  logger: Logger;
  /** Event connection lease; a dead holder is replaced within about this long. */
  leaderTtlMs?: number;
  /** WebSocket and SSE: the stream's clock and tuning (tests shorten them). */
  eventStream?: Pick<MilkyEventStreamOptions, "clock" | "timings" | "backfillWindowMs">;
  /** Webhook transport: where the receiver listens; `path` defaults to `/<channel>/webhook`. */
  webhook?: { host: string; port: number; path?: string; bodyLimitBytes?: number };
}

export interface RunningMilkyIngress {
  /** The logged-in QQ account. */
  selfId: number;
  nickname: string;
  stream?: MilkyEventStream;
  webhookAddress?: string;
  /** WebSocket/SSE: the event stream's ({@link MilkyEventStream.readiness}); webhook: while the receiver listens. */
  readiness(): Promise<Readiness>;
  stop(): Promise<void>;
}

async function whoAmI(api: MilkyApiClient): Promise<{ uin: number; nickname: string }> {
  try {
    return await api.call("get_login_info", {}, GetLoginInfoOutput);
  } catch (error) {
    if (error instanceof MilkyApiError && error.failure.kind === "http" && error.failure.status === 401) {
      throw new ChannelStartError("ACCESS_TOKEN", `the Milky implementation refused the access token (${error.message})`);
    }
    if (error instanceof MilkyApiError && error.failure.kind === "retcode" && error.failure.retcode === -403) {
      throw new ChannelStartError("BASE_URL", `the QQ account at the Milky implementation is not logged in (${error.message})`);
    }
    throw new ChannelStartError("BASE_URL", `cannot reach the Milky implementation: ${(error as Error).message}`);
  }
}

/** Starts taking one account's Milky events over the configured transport. */
export async function startMilkyIngress(o: MilkyIngressOptions): Promise<RunningMilkyIngress> {
  const channel = o.channel ?? DEFAULT_MILKY_CHANNEL;
  // Otherwise every event would be ignored for its unparseable chat address.
  if (!isChannelName(channel)) throw new RangeError(`Milky channel name ${JSON.stringify(channel)} must match [a-z][a-z0-9_-]*`);
  const api = new MilkyApiClient({ baseUrl: o.baseUrl, ...(o.accessToken ? { accessToken: o.accessToken } : {}) });
  const me = await whoAmI(api);
  const logger = o.logger.child({ channel, self_id: me.uin });
  const acceptEvent = createMilkyEventHandler({ selfId: me.uin, channel, intake: o.intake });

  if (o.transport !== "webhook") {
    // One connection per account: the key is the account and the implementation (hashed,
    // so no URL lands in Redis keys), whatever the instance is called.
    const accountKey = createHash("sha256").update(`${me.uin}@${normalizeMilkyBaseUrl(o.baseUrl)}`).digest("hex").slice(0, 16);
    const stream = new MilkyEventStream({
      baseUrl: o.baseUrl,
      ...(o.accessToken ? { accessToken: o.accessToken } : {}),
      transport: o.transport,
      selfId: me.uin,
      leadership: new RedisLeadership(o.redis, `${o.prefix}:milky:event:${accountKey}`, `${hostname()}:${process.pid}:${randomUUID()}`, o.leaderTtlMs ?? recoveryTimings().leadershipTtlMs),
      api,
      redis: o.redis,
      recentChatsKey: `${o.prefix}:milky:recent-chats:${accountKey}`,
      acceptEvent,
      logger,
      ...o.eventStream,
    });
    stream.start();
    return { selfId: me.uin, nickname: me.nickname, stream, readiness: () => stream.readiness(), stop: () => stream.stop() };
  }

  if (!o.accessToken) throw new ChannelStartError("ACCESS_TOKEN", "the webhook transport needs the access token to check pushes");
  if (!o.webhook) throw new ChannelStartError("EVENT_TRANSPORT", "the webhook transport needs a listen address");
  const server = Fastify(serverOptions({ logger: logger.child({ scope: "milky-webhook" }) as unknown as FastifyBaseLogger, bodyLimitBytes: o.webhook.bodyLimitBytes ?? 1024 * 1024 }));
  // The gateway's error shape: 4xx keep their message (413 for an oversize body), 5xx are logged and hidden.
  await server.register(errorHandlerPlugin);
  await server.register(jsonBodyPlugin);
  await server.register(milkyWebhookRoute, { path: o.webhook.path ?? `/${channel}/webhook`, accessToken: o.accessToken, acceptEvent, logger });
  const address = await server.listen({ host: o.webhook.host, port: o.webhook.port });
  const readiness = async (): Promise<Readiness> => (server.server.listening ? { ok: true } : { ok: false, reason: "the webhook receiver is not listening" });
  return { selfId: me.uin, nickname: me.nickname, webhookAddress: address, readiness, stop: () => server.close() };
}
