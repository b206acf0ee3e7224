import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import type { RedisNode, RedisTarget } from "@nahida/queue";
import { waitFor } from "./infra";
import { freePort } from "./ports";
import { askRedis, killRedisServer, startRedisServer, stopRedisServers, type Server } from "./redis-servers";

const MASTER_NAME = "nahida-test";

export interface SentinelGroup {
  /** What the services are given in place of REDIS_URL. */
  env: Record<string, string>;
  target: RedisTarget;
  /** A client of the current master, through the sentinels, as the services connect. */
  connect(): Redis;
  /** The master the sentinels name now. */
  master(): Promise<RedisNode>;
  /** SIGKILLs the current master's server; returns when it is gone, with the time it was killed. */
  killMaster(): Promise<{ node: RedisNode; killedAt: number }>;
  close(): Promise<void>;
}

/**
 * A real Sentinel deployment on this machine: a master, one replica and three sentinels
 * (quorum 2) that call the master down after 1 s without an answer. Nothing is kept on
 * disk; the sentinels' configuration files live in a temporary directory.
 */
export async function startSentinelGroup(): Promise<SentinelGroup> {
  const dir = await mkdtemp(join(tmpdir(), "nahida-sentinel-"));
  const servers: Server[] = [];
  const stopAll = async () => {
    await stopRedisServers(servers);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const common = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir];
    const masterPort = await freePort();
    servers.push(await startRedisServer(["--port", String(masterPort), ...common], masterPort));
    const replicaPort = await freePort();
    servers.push(await startRedisServer(["--port", String(replicaPort), ...common, "--replicaof", "127.0.0.1", String(masterPort)], replicaPort));
    const sentinels: RedisNode[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const config = join(dir, `sentinel-${i}.conf`);
      // A sentinel rewrites its own configuration file as it learns the group.
      await writeFile(
        config,
        [
          `port ${port}`,
          "bind 127.0.0.1",
          `dir ${dir}`,
          `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${masterPort} 2`,
          `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
          `sentinel failover-timeout ${MASTER_NAME} 5000`,
          `sentinel parallel-syncs ${MASTER_NAME} 1`,
          "",
        ].join("\n"),
      );
      servers.push(await startRedisServer([config, "--sentinel"], port));
      sentinels.push({ host: "127.0.0.1", port });
    }
    const target: RedisTarget = { kind: "sentinel", sentinels, name: MASTER_NAME };
    const askSentinel = async (): Promise<RedisNode> => {
      for (const s of sentinels) {
        try {
          const [host, port] = await askRedis<[string, string]>(s, "SENTINEL", "get-master-addr-by-name", MASTER_NAME);
          return { host, port: Number(port) };
        } catch {
          // The next sentinel.
        }
      }
      throw new Error("no sentinel answered");
    };
    // Every sentinel has found the replica and the others before anything relies on a failover.
    await waitFor(async () => {
      for (const s of sentinels) {
        const info = await askRedis<string[]>(s, "SENTINEL", "master", MASTER_NAME);
        const field = (name: string) => Number(info[info.indexOf(name) + 1]);
        if (field("num-slaves") < 1 || field("num-other-sentinels") < 2) return false;
      }
      return true;
    }, 30_000, "the sentinels to know the replica and each other", 200);

    return {
      env: { REDIS_SENTINELS: sentinels.map((s) => `${s.host}:${s.port}`).join(","), REDIS_SENTINEL_NAME: MASTER_NAME },
      target,
      connect() {
        const client = new Redis({ sentinels: sentinels.map((s) => ({ ...s })), name: MASTER_NAME });
        // Through a failover it reconnects; the refused attempts are expected.
        client.on("error", () => undefined);
        return client;
      },
      master: askSentinel,
      killMaster: async () => killRedisServer(servers, await askSentinel()),
      close: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
