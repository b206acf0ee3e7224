import { Redis, type RedisOptions } from "ioredis";
import { createCluster, describeRedisTarget, redisTargetOptions, type RedisTarget } from "@nahida/queue";
import { checkSessionTimeZone, migrate, type Database } from "@nahida/db";

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
  const e = error as { code?: string; message?: string; errors?: { message?: string }[]; lastNodeError?: unknown };
  // pg reports an AggregateError (IPv4 + IPv6 attempts) with an empty message.
  const message = e.message || e.errors?.map((x) => x.message).join("; ") || String(error);
  const described = e.code && !message.includes(e.code) ? `${e.code} ${message}` : message;
  // ioredis' cluster says only "Failed to refresh slots cache."; the node's refusal is the cause.
  return e.lastNodeError ? `${described} (${describe(e.lastNodeError)})` : described;
}

/** The server was there and ended the connection: admin shutdown, crash, still starting, or a dropped socket. */
function droppedByServer(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return (typeof code === "string" && /^57P0[1-3]$/.test(code)) || /Connection terminated|not queryable/i.test((error as Error)?.message ?? "");
}

function where(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || "default port"}`;
}

/**
 * Runs `fn`, and again (10 tries, 500 ms apart) while Postgres answered and then dropped the
 * connection (a restart, an admin terminating backends). Any other failure ends it at once:
 * a server that cannot be reached is usually a wrong URL.
 */
async function retryWhileDropped<T>(fn: () => Promise<T>, onDropped: (error: unknown) => void = () => undefined): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (attempt >= 10 || !droppedByServer(error)) throw error;
      onDropped(error);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/**
 * Creates and migrates the database; one clear error, naming `variable` (the URL's
 * variable), if Postgres cannot be used.
 */
export async function preparePostgres(databaseUrl: string, log: (message: string) => void, variable = "DATABASE_URL"): Promise<void> {
  try {
    await retryWhileDropped(
      () => migrate({ databaseUrl, log }),
      (error) => log(`Postgres dropped the connection while preparing the database (${describe(error)}); trying again`),
    );
  } catch (error) {
    if ((error as Error).name === "MigrationError") throw new PreflightError(variable, (error as Error).message);
    throw new PreflightError(variable, `cannot use Postgres at ${where(databaseUrl)}: ${describe(error)}`);
  }
}

/**
 * The pool's sessions keep time in UTC: set by the pool's startup option, or behind a
 * transaction pooler by the pooler or the server (the services cannot set it there;
 * {@link checkSessionTimeZone}).
 */
export async function checkPooledSessions(pool: Database["pool"], databaseUrl: string): Promise<void> {
  let zone: string | null;
  try {
    zone = await retryWhileDropped(() => checkSessionTimeZone(pool));
  } catch (error) {
    throw new PreflightError("DATABASE_URL", `cannot use Postgres at ${where(databaseUrl)}: ${describe(error)}`);
  }
  if (zone !== null) {
    throw new PreflightError(
      "DATABASE_URL",
      `the sessions keep time in ${zone}, not UTC: behind PgBouncer set timezone=UTC on its database entry, or ALTER DATABASE ... SET timezone = 'UTC'`,
    );
  }
}

/** Checks that Redis answers, without ioredis's endless reconnect loop. */
export async function checkRedis(target: RedisTarget, timeoutMs = 5_000): Promise<void> {
  const options: RedisOptions = {
    ...redisTargetOptions(target),
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    // Behind Sentinel: one round over the sentinels, then the error.
    sentinelRetryStrategy: () => null,
    connectTimeout: timeoutMs,
  };
  const redis =
    target.kind === "cluster"
      ? createCluster(target.nodes, { ...redisTargetOptions(target), maxRetriesPerRequest: 0, connectTimeout: timeoutMs }, { lazyConnect: true, clusterRetryStrategy: () => null })
      : target.kind === "url"
        ? new Redis(target.url, options)
        : new Redis(options);
  // The socket error (ECONNREFUSED, ENOTFOUND) arrives as an event; connect() only says "closed".
  let socketError: unknown;
  redis.on("error", (error) => {
    socketError ??= error;
  });
  // A sentinel that answers but knows no such master says so only here; connect() then
  // says that every sentinel is unreachable.
  redis.on("sentinelError", (error) => {
    socketError ??= error;
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    // A cluster whose state is `fail` leaves connect() unsettled: bounded here.
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    await Promise.race([redis.connect().then(() => redis.ping()), timeout]);
  } catch (error) {
    const variable = { url: "REDIS_URL", sentinel: "REDIS_SENTINELS", cluster: "REDIS_CLUSTER_NODES" }[target.kind];
    throw new PreflightError(variable, `cannot reach Redis at ${describeRedisTarget(target)}: ${describe(socketError ?? error)}`);
  } finally {
    clearTimeout(timer);
    redis.disconnect();
  }
}
