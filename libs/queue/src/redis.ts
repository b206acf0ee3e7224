import { Redis, type RedisOptions } from "ioredis";
import type { Readiness } from "@nahida/contracts";

export interface RedisNode {
  host: string;
  port: number;
}

/**
 * Where Redis is: one server by URL, or a master that Redis Sentinel watches and replaces
 * by a replica when it fails (every connection asks the sentinels for the current master).
 */
export type RedisTarget =
  | { kind: "url"; url: string }
  | {
      kind: "sentinel";
      sentinels: readonly RedisNode[];
      /** The master group's name in the sentinels' configuration (`sentinel monitor <name> ...`). */
      name: string;
      username?: string;
      password?: string;
      sentinelUsername?: string;
      sentinelPassword?: string;
    };

/** Redis by target, or by a redis:// URL (one server). */
export type RedisConnectionOptions = ({ target: RedisTarget } | { url: string }) & {
  /** Workers block on Redis; BullMQ requires `maxRetriesPerRequest: null` for them. */
  blocking?: boolean;
  /** Name shown in `CLIENT LIST`, handy when several services share one Redis. */
  connectionName?: string;
};

/**
 * The connection options a target adds. Behind Sentinel: the sentinels' +switch-master
 * announcements make a connection move to the new master at once (failoverDetector), and a
 * write refused by a demoted master (READONLY, its connections kept through a manual
 * failover) reconnects and is sent again, to the master the sentinels name.
 */
export function redisTargetOptions(target: RedisTarget): RedisOptions {
  if (target.kind === "url") return {};
  return {
    sentinels: target.sentinels.map((s) => ({ host: s.host, port: s.port })),
    name: target.name,
    failoverDetector: true,
    reconnectOnError: (error) => (error.message.startsWith("READONLY") ? 2 : false),
    ...(target.username ? { username: target.username } : {}),
    ...(target.password ? { password: target.password } : {}),
    ...(target.sentinelUsername ? { sentinelUsername: target.sentinelUsername } : {}),
    ...(target.sentinelPassword ? { sentinelPassword: target.sentinelPassword } : {}),
  };
}

/** Where a target is, for messages: the URL's host and port, or the sentinels and the group. */
export function describeRedisTarget(target: RedisTarget): string {
  if (target.kind === "sentinel") return `master ${target.name} of sentinels ${target.sentinels.map((s) => `${s.host}:${s.port}`).join(", ")}`;
  const url = new URL(target.url);
  return `${url.hostname}:${url.port || "6379"}`;
}

/** Creates an ioredis client for a target. The caller owns and closes it. */
export function createRedis(options: RedisConnectionOptions): Redis {
  const target: RedisTarget = "target" in options ? options.target : { kind: "url", url: options.url };
  const redisOptions: RedisOptions = {
    maxRetriesPerRequest: options.blocking ? null : 3,
    enableReadyCheck: true,
    lazyConnect: false,
    ...(options.connectionName ? { connectionName: options.connectionName } : {}),
    ...redisTargetOptions(target),
  };
  return target.kind === "url" ? new Redis(target.url, redisOptions) : new Redis(redisOptions);
}

/** Redis readiness: a PING answered within `timeoutMs`. */
export async function pingRedis(redis: Redis, timeoutMs: number): Promise<Readiness> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([redis.ping(), timeout]);
    return { ok: true };
  } catch (error) {
    return { ok: false, reason: `redis unreachable: ${(error as Error).message}` };
  } finally {
    clearTimeout(timer);
  }
}
