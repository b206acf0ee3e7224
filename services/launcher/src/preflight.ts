import { Redis } from "ioredis";
import { migrate } from "@nahida/db";

/** A startup failure worth one line to the operator, naming the variable to fix. */
export class PreflightError extends Error {
  override name = "PreflightError";
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
  }
}

function describe(error: unknown): string {
  const e = error as { code?: string; message?: string; errors?: { message?: string }[] };
  // pg reports an AggregateError (IPv4 + IPv6 attempts) with an empty message.
  const message = e.message || e.errors?.map((x) => x.message).join("; ") || String(error);
  return e.code && !message.includes(e.code) ? `${e.code} ${message}` : message;
}

function where(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || "default port"}`;
}

/** Creates and migrates the database; one clear error if Postgres cannot be used. */
export async function preparePostgres(databaseUrl: string, log: (message: string) => void): Promise<void> {
  try {
    await migrate({ databaseUrl, log });
  } catch (error) {
    if ((error as Error).name === "MigrationError") throw new PreflightError("DATABASE_URL", (error as Error).message);
    throw new PreflightError("DATABASE_URL", `cannot use Postgres at ${where(databaseUrl)}: ${describe(error)}`);
  }
}

/** Checks that Redis answers, without ioredis's endless reconnect loop. */
export async function checkRedis(redisUrl: string, timeoutMs = 5_000): Promise<void> {
  const redis = new Redis(redisUrl, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: timeoutMs,
  });
  // The socket error (ECONNREFUSED, ENOTFOUND) arrives as an event; connect() only says "closed".
  let socketError: unknown;
  redis.on("error", (error) => {
    socketError ??= error;
  });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new PreflightError("REDIS_URL", `cannot reach Redis at ${where(redisUrl)}: ${describe(socketError ?? error)}`);
  } finally {
    redis.disconnect();
  }
}
