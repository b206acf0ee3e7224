import { Redis, type RedisOptions } from "ioredis";

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
