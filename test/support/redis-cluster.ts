import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Cluster } from "ioredis";
import { clusterQueuePrefix, type RedisNode, type RedisTarget } from "@nahida/queue";
import { waitFor } from "./infra";
import { freePort } from "./ports";
import { askRedis, killRedisServer, startRedisServer, stopRedisServers, type Server } from "./redis-servers";

export interface RedisClusterGroup {
  /** What the services are given in place of REDIS_URL. */
  env: Record<string, string>;
  target: RedisTarget;
  /** The key prefix the services use on a cluster: the queue prefix as a hash tag. */
  keyPrefix(prefix: string): string;
  /** A cluster client, as the services connect. */
  connect(): Cluster;
  /** The master that serves `key`'s slot now. */
  masterOf(key: string): Promise<RedisNode>;
  /** Every master now. */
  masters(): Promise<RedisNode[]>;
  /** SIGKILLs the master serving `key`'s slot; returns once it is gone. */
  killMasterOf(key: string): Promise<{ node: RedisNode; killedAt: number }>;
  close(): Promise<void>;
}

/**
 * A real Redis Cluster on this machine: three masters with a replica each, made by
 * `redis-cli --cluster create`. A node is failed after 1 s without an answer
 * (cluster-node-timeout), so a killed master's replica takes over in a few seconds.
 */
export async function startRedisCluster(): Promise<RedisClusterGroup> {
  const dir = await mkdtemp(join(tmpdir(), "nahida-cluster-"));
  const servers: Server[] = [];
  const stopAll = async () => {
    await stopRedisServers(servers);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < 6; i++) {
      const port = await freePort();
      const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir];
      servers.push(await startRedisServer([...args, "--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`, "--cluster-node-timeout", "1000"], port));
    }
    await promisify(execFile)("redis-cli", ["--cluster", "create", ...servers.map((s) => `${s.node.host}:${s.node.port}`), "--cluster-replicas", "1", "--cluster-yes"]);
    await waitFor(async () => {
      const infos = await Promise.all(servers.map((s) => askRedis<string>(s.node, "CLUSTER", "INFO").catch(() => "")));
      return infos.every((info) => info.includes("cluster_state:ok") && info.includes("cluster_slots_ok:16384"));
    }, 30_000, "the cluster to cover every slot", 200);

    const nodes = servers.slice(0, 3).map((s) => s.node);
    /** CLUSTER SLOTS of the first live node that answers: each range with its master. */
    const slots = async (): Promise<{ from: number; to: number; master: RedisNode; via: RedisNode }[]> => {
      for (const s of servers) {
        if (s.child.exitCode !== null || s.child.signalCode !== null) continue;
        try {
          const ranges = await askRedis<[number, number, [string, number, string]][]>(s.node, "CLUSTER", "SLOTS");
          return ranges.map(([from, to, [host, port]]) => ({ from, to, master: { host, port: Number(port) }, via: s.node }));
        } catch {
          // The next node.
        }
      }
      throw new Error("no node answered");
    };
    const masterOf = async (key: string): Promise<RedisNode> => {
      const ranges = await slots();
      const slot = await askRedis<number>(ranges[0]!.via, "CLUSTER", "KEYSLOT", key);
      const range = ranges.find((r) => slot >= r.from && slot <= r.to);
      if (!range) throw new Error(`no master serves slot ${slot}`);
      return range.master;
    };
    return {
      env: { REDIS_CLUSTER_NODES: nodes.map((n) => `${n.host}:${n.port}`).join(",") },
      target: { kind: "cluster", nodes },
      keyPrefix: clusterQueuePrefix,
      connect() {
        const client = new Cluster(nodes.map((n) => ({ ...n })));
        // Through a failover it reconnects; the refused attempts are expected.
        client.on("error", () => undefined);
        return client;
      },
      masterOf,
      async masters() {
        const unique = new Map((await slots()).map((r) => [r.master.port, r.master]));
        return [...unique.values()];
      },
      killMasterOf: async (key) => killRedisServer(servers, await masterOf(key)),
      close: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
