import { spawn, type ChildProcess } from "node:child_process";
import { Redis } from "ioredis";
import type { RedisNode } from "@nahida/queue";
import { waitFor } from "./infra";

/** A redis-server (or sentinel) process a test started, on 127.0.0.1. */
export interface Server {
  node: RedisNode;
  child: ChildProcess;
  exited: Promise<void>;
  output(): string;
}

/** One command to one server (or sentinel) on a connection of its own; rejects when it does not answer. */
export async function askRedis<T>(node: RedisNode, command: string, ...args: string[]): Promise<T> {
  const client = new Redis({ host: node.host, port: node.port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on("error", () => undefined);
  try {
    await client.connect();
    return (await client.call(command, ...args)) as T;
  } finally {
    client.disconnect();
  }
}

export async function startRedisServer(args: string[], port: number): Promise<Server> {
  const child = spawn("redis-server", args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const started = { node: { host: "127.0.0.1", port }, child, exited, output: () => output };
  try {
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`redis-server ${args.join(" ")} exited:\n${output}`);
      return askRedis<string>(started.node, "PING").then((answer) => answer === "PONG", () => false);
    }, 10_000, `redis-server on port ${port}`);
  } catch (error) {
    child.kill("SIGKILL");
    await exited;
    throw error;
  }
  return started;
}

/** SIGKILLs the server at `node`; returns once it is gone, with the time it was killed. */
export async function killRedisServer(servers: readonly Server[], node: RedisNode): Promise<{ node: RedisNode; killedAt: number }> {
  const server = servers.find((s) => s.node.port === node.port);
  if (!server) throw new Error(`${node.host}:${node.port} is not a server this test started`);
  const killedAt = Date.now();
  server.child.kill("SIGKILL");
  await server.exited;
  return { node, killedAt };
}

/** SIGKILLs every server and waits for them. */
export async function stopRedisServers(servers: readonly Server[]): Promise<void> {
  for (const s of servers) s.child.kill("SIGKILL");
  await Promise.all(servers.map((s) => s.exited));
}
