import { randomBytes } from "node:crypto";
import pg from "pg";
import { createDatabase, describeDatabaseUrl, migrate, type Database } from "@nahida/db";

/** Postgres server for tests; each test file gets its own database on it. */
export const TEST_POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

export function uniqueName(label: string): string {
  return `${label.replace(/[^a-z0-9]/gi, "_").toLowerCase().slice(0, 30)}_${randomBytes(4).toString("hex")}`;
}

/** A queue prefix no other test file uses. */
export function testQueuePrefix(label: string): string {
  return `nahida_test_${uniqueName(label)}`;
}

export interface TestDatabase {
  url: string;
  db: Database;
  drop(): Promise<void>;
}

/** Creates and migrates a fresh database; `drop` closes connections and removes it. */
export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const name = `nahida_t_${uniqueName(label)}`;
  const url = new URL(TEST_POSTGRES_URL);
  url.pathname = `/${name}`;
  await migrate({ databaseUrl: url.toString() });
  const db = createDatabase({ url: url.toString(), poolSize: 5 });
  return {
    url: url.toString(),
    db,
    async drop() {
      await db.close();
      await dropDatabase(url.toString());
    },
  };
}

export async function dropDatabase(databaseUrl: string): Promise<void> {
  const { database, maintenanceUrl } = describeDatabaseUrl(databaseUrl);
  const client = new pg.Client({ connectionString: maintenanceUrl });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/**
 * Removes every Redis key under a queue prefix, on the server at `redisUrl` or through a
 * client. On a cluster the prefix must be a hash tag (`{nahida}`): its keys are in one slot,
 * whose master the script is sent to.
 */
export async function clearQueuePrefix(redisUrlOrClient: string | import("ioredis").Redis | import("ioredis").Cluster, prefix: string): Promise<void> {
  const { Redis } = await import("ioredis");
  const own = typeof redisUrlOrClient === "string";
  const redis = own ? new Redis(redisUrlOrClient) : redisUrlOrClient;
  try {
    // In one script, so atomic like the loss it stands for (a restart of a Redis that keeps
    // nothing): deleting key by key while workers run leaves half-deleted jobs (an id in a
    // list whose hash is gone, a hash that a script then re-creates without its name and
    // data), a state no real outage produces.
    // A key of the prefix names the slot, and so the node, the script runs on.
    await redis.eval(
      `local keys = redis.call('KEYS', ARGV[1])
       for i = 1, #keys, 1000 do redis.call('DEL', unpack(keys, i, math.min(i + 999, #keys))) end
       return #keys`,
      1,
      `${prefix}:`,
      `${prefix}:*`,
    );
  } finally {
    if (own) redis.disconnect();
  }
}

/** Polls until `check` returns a truthy value or the time runs out. */
export async function waitFor<T>(check: () => Promise<T | undefined | null | false>, timeoutMs: number, what: string, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
