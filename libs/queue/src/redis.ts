import { Redis, type RedisOptions } from "ioredis";
import type { Readiness } from "@nahida/contracts";

export interface RedisConnectionOptions {
  url: string;
  /** Workers block on Redis; BullMQ requires `maxRetriesPerRequest: null` for them. */
  blocking?: boolean;
  /** Name shown in `CLIENT LIST`, handy when several services share one Redis. */
  connectionName?: string;
}

/** Creates an ioredis client from a redis:// URL. The caller owns and closes it. */
export function createRedis(options: RedisConnectionOptions): Redis {
  const redisOptions: RedisOptions = {
    maxRetriesPerRequest: options.blocking ? null : 3,
    enableReadyCheck: true,
    lazyConnect: false,
    ...(options.connectionName ? { connectionName: options.connectionName } : {}),
  };
  return new Redis(options.url, redisOptions);
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
