import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import type { Readiness } from "@nahida/contracts";

export interface RedisNode {
  host: string;
  port: number;
}

/**
 * Where Redis is: one server by URL; a master that Redis Sentinel watches and replaces by a
 * replica when it fails (every connection asks the sentinels for the current master); or a
 * Redis Cluster, reached through any of its nodes.
 */
export type RedisTarget =
  | { kind: "url"; url: string }
  | {
      kind: "cluster";
      /** Nodes to learn the cluster from; the rest are found through them. */
      nodes: readonly RedisNode[];
      username?: string;
      password?: string;
    }
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
 * The connection options a target adds. Behind Sentinel a connection learns of a failover
 * when its master's socket closes (a dead master; and Sentinel makes a demoted master drop
 * its clients), and a write refused by a demoted master (READONLY) reconnects and is sent
 * again, to the master the sentinels name. Not ioredis' failoverDetector: its +switch-master
 * disconnect, arriving while the connection is asking the sentinels after the master died,
 * ends the connection for good ("Connection is closed.", seen in
 * test/faults/redis-sentinel.test.ts about one run in ten).
 */
export function redisTargetOptions(target: RedisTarget): RedisOptions {
  if (target.kind === "url") return {};
  if (target.kind === "cluster") return { ...(target.username ? { username: target.username } : {}), ...(target.password ? { password: target.password } : {}) };
  return {
    sentinels: target.sentinels.map((s) => ({ host: s.host, port: s.port })),
    name: target.name,
    reconnectOnError: (error) => (error.message.startsWith("READONLY") ? 2 : false),
    ...(target.username ? { username: target.username } : {}),
    ...(target.password ? { password: target.password } : {}),
    ...(target.sentinelUsername ? { sentinelUsername: target.sentinelUsername } : {}),
    ...(target.sentinelPassword ? { sentinelPassword: target.sentinelPassword } : {}),
  };
}

/** Where a target is, for messages: the URL's host and port, or the sentinels and the group. */
export function describeRedisTarget(target: RedisTarget): string {
  if (target.kind === "cluster") return `cluster nodes ${target.nodes.map((n) => `${n.host}:${n.port}`).join(", ")}`;
  if (target.kind === "sentinel") return `master ${target.name} of sentinels ${target.sentinels.map((s) => `${s.host}:${s.port}`).join(", ")}`;
  const url = new URL(target.url);
  return `${url.hostname}:${url.port || "6379"}`;
}

/**
 * A Redis Cluster client. Every key Nahida writes carries the deployment's hash tag
 * ({@link clusterQueuePrefix}), so each script and transaction stays in one slot.
 */
export function createCluster(nodes: readonly RedisNode[], redisOptions: RedisOptions, clusterOptions: ClusterOptions = {}): Cluster {
  return new Cluster(
    nodes.map((n) => ({ host: n.host, port: n.port })),
    { enableReadyCheck: true, ...clusterOptions, redisOptions },
  );
}

/**
 * The key prefix on a Redis Cluster: the deployment's prefix as a hash tag (`{nahida}`), so
 * all its keys share one slot. BullMQ's scripts touch several keys of a queue at once, and
 * so do our own; a cluster refuses a command whose keys span slots (CROSSSLOT).
 */
export function clusterQueuePrefix(prefix: string): string {
  return `{${prefix}}`;
}

/** Creates an ioredis client for a target. The caller owns and closes it. */
export function createRedis(options: { url: string } & Omit<RedisConnectionOptions, "target">): Redis;
export function createRedis(options: RedisConnectionOptions): Redis | Cluster;
export function createRedis(options: RedisConnectionOptions): Redis | Cluster {
  const target: RedisTarget = "target" in options ? options.target : { kind: "url", url: options.url };
  const redisOptions: RedisOptions = {
    maxRetriesPerRequest: options.blocking ? null : 3,
    ...(options.connectionName ? { connectionName: options.connectionName } : {}),
    ...redisTargetOptions(target),
  };
  // The cluster opens its node connections itself, when it needs them.
  if (target.kind === "cluster") return createCluster(target.nodes, redisOptions);
  const single = { ...redisOptions, enableReadyCheck: true, lazyConnect: false };
  return target.kind === "url" ? new Redis(target.url, single) : new Redis(single);
}

/**
 * Redis readiness: an answer within `timeoutMs` from the server that holds the deployment's
 * keys. A cluster sends a PING to any master, which may answer while the prefix's slot has
 * none; a read of a key under `prefix` goes to that slot's master.
 */
export async function pingRedis(redis: Redis | Cluster, timeoutMs: number, prefix?: string): Promise<Readiness> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([prefix === undefined ? redis.ping() : redis.exists(`${prefix}:probe`), timeout]);
    return { ok: true };
  } catch (error) {
    return { ok: false, reason: `redis unreachable: ${(error as Error).message}` };
  } finally {
    clearTimeout(timer);
  }
}
