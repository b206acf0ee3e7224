import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Redis } from "ioredis";
import type { Database } from "@nahida/db";
import type { Logger } from "@nahida/observability";
import { app } from "./app";

export interface GatewayOptions {
  host: string;
  port: number;
  /** Largest accepted request body. */
  bodyLimitBytes: number;
  db: Database;
  redis: Redis;
  logger: Logger;
}

export interface RunningGateway {
  server: FastifyInstance;
  /** Where it listens, e.g. http://127.0.0.1:8080 */
  address: string;
  stop(): Promise<void>;
}

async function pingRedis(redis: Redis, timeoutMs: number): Promise<{ ok: true } | { ok: false; reason: string }> {
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

export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const server = Fastify({
    loggerInstance: options.logger.child({ scope: "http" }) as unknown as FastifyBaseLogger,
    bodyLimit: options.bodyLimitBytes,
  });
  await server.register(app, {
    probes: [
      { name: "postgres", check: () => options.db.checkReady() },
      { name: "redis", check: () => pingRedis(options.redis, 2_000) },
    ],
  });
  const address = await server.listen({ host: options.host, port: options.port });
  return {
    server,
    address,
    async stop() {
      await server.close();
    },
  };
}
