import { createHash, randomUUID } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { isOutage } from "../database";
import { describeDatabaseUrl } from "../database-url";

/** prisma/migrations at the repository root. */
export const defaultMigrationsDir = fileURLToPath(new URL("../../../../prisma/migrations", import.meta.url));

const NO_TRANSACTION = "-- nahida: no-transaction";

// Any constant works; it only has to be the same for every process migrating this database.
const MIGRATION_LOCK_KEY = 7_243_001_115;
const LOCK_NOT_AVAILABLE = "55P03";
/** A no-transaction migration that cannot get a table lock within its lock_timeout tries again this often, this long. */
const LOCK_ATTEMPTS = 30;
const LOCK_RETRY_PAUSE_MS = 2_000;
/** How often a process waiting for another's migrations tries the lock again. */
const LOCK_RETRY_MS = 200;

export interface MigrateOptions {
  databaseUrl: string;
  migrationsDir?: string;
  /** Create the database when it does not exist (needs CREATEDB on the maintenance database). */
  createDatabase?: boolean;
  log?: (message: string) => void;
}

export interface MigrationFile {
  name: string;
  sql: string;
  /**
   * Its first line is `-- nahida: no-transaction`: its statements run one by one outside a
   * transaction (CREATE INDEX CONCURRENTLY cannot run in one). Such a migration must be safe
   * to run again from its start: a failure is not recorded, so the next start retries it.
   */
  noTransaction: boolean;
  /** sha256 of the file, as Prisma stores it in `_prisma_migrations.checksum`. */
  checksum: string;
}

export interface MigrateResult {
  applied: string[];
  alreadyApplied: string[];
}

export class MigrationError extends Error {
  override name = "MigrationError";
  constructor(
    message: string,
    readonly migration?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Names of the migration directories on disk, in the order they apply. */
export async function listMigrationNames(dir: string = defaultMigrationsDir): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  return entries.filter((e) => e.isDirectory()).map((e) => e.name).sort();
}

export async function readMigrations(dir: string = defaultMigrationsDir): Promise<MigrationFile[]> {
  const names = await listMigrationNames(dir);
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(join(dir, name, "migration.sql"), "utf8");
      // A checkout with CRLF line ends or a BOM is the same migration (the checksum stays the file's).
      const text = sql.replace(/^\uFEFF/, "").replace(/\r\n/g, "\n");
      return { name, sql: text, noTransaction: text.startsWith(NO_TRANSACTION), checksum: createHash("sha256").update(sql).digest("hex") };
    }),
  );
}

/**
 * A connected client whose connection errors never go unhandled: a backend terminated while
 * the client waits between queries emits `error`, which without a listener ends the process.
 * The query in flight, if any, still rejects with it.
 */
async function connectedClient(connectionString: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString });
  client.on("error", () => undefined);
  await client.connect();
  return client;
}

/** Creates the database named in the URL if it is missing; safe when several processes race. */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const { database, maintenanceUrl } = describeDatabaseUrl(databaseUrl);
  const client = await connectedClient(maintenanceUrl);
  try {
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
    if (found.rowCount) return false;
    try {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
      return true;
    } catch (error) {
      // 42P04 duplicate_database, or 23505 when two CREATE DATABASE race on pg_database.
      const code = (error as { code?: string }).code;
      if (code === "42P04" || code === "23505") return false;
      throw error;
    }
  } finally {
    await client.end();
  }
}

const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

interface AppliedRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

/**
 * Applies pending migrations in name order and records them in `_prisma_migrations` the
 * way `prisma migrate deploy` does, so either tool can take over. Idempotent; concurrent
 * callers serialise on an advisory lock. Each migration runs in its own transaction, except
 * a no-transaction one (see {@link MigrationFile.noTransaction}).
 */
export async function migrate(options: MigrateOptions): Promise<MigrateResult> {
  const log = options.log ?? (() => undefined);
  if (options.createDatabase ?? true) {
    if (await ensureDatabase(options.databaseUrl)) log(`created database ${describeDatabaseUrl(options.databaseUrl).database}`);
  }
  const migrations = await readMigrations(options.migrationsDir);
  const client = await connectedClient(options.databaseUrl);
  try {
    await takeMigrationLock(client);
    await client.query(CREATE_MIGRATIONS_TABLE);
    const rows = (
      await client.query<AppliedRow>(
        `SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL`,
      )
    ).rows;
    const failed = rows.find((r) => r.finished_at === null);
    if (failed) {
      throw new MigrationError(
        `migration ${failed.migration_name} failed earlier and must be resolved by hand (see _prisma_migrations.logs)`,
        failed.migration_name,
      );
    }
    const done = new Map(rows.map((r) => [r.migration_name, r]));
    const result: MigrateResult = { applied: [], alreadyApplied: [] };
    for (const migration of migrations) {
      const existing = done.get(migration.name);
      if (existing) {
        if (existing.checksum !== migration.checksum) {
          log(`warning: migration ${migration.name} was modified after it was applied`);
        }
        result.alreadyApplied.push(migration.name);
        continue;
      }
      await applyOne(client, migration);
      log(`applied migration ${migration.name}`);
      result.applied.push(migration.name);
    }
    return result;
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}

/**
 * Waits for the migration lock by trying it, not by blocking in `pg_advisory_lock`: a
 * blocked call holds a snapshot for as long as it waits, and CREATE INDEX CONCURRENTLY in
 * the holder's no-transaction migration waits for every older snapshot to end. Postgres
 * then breaks the cycle by failing one of the two ("deadlock detected").
 */
async function takeMigrationLock(client: pg.Client): Promise<void> {
  for (;;) {
    const { rows } = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock($1) AS ok", [MIGRATION_LOCK_KEY]);
    if (rows[0]?.ok) return;
    await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
  }
}

async function applyOne(client: pg.Client, migration: MigrationFile): Promise<void> {
  const id = randomUUID();
  if (migration.noTransaction) {
    for (let attempt = 1; ; attempt++) {
      try {
        // One statement per query: a multi-statement query string runs as one implicit transaction.
        for (const statement of splitStatements(migration.sql)) await client.query(statement);
        break;
      } catch (error) {
        if (isOutage(error)) throw error;
        // The migration's lock_timeout gave up waiting for a table someone holds (a backup):
        // the hot path queued behind it for that long only. Its statements may run again.
        if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE && attempt < LOCK_ATTEMPTS) {
          await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_PAUSE_MS));
          continue;
        }
        throw new MigrationError(`migration ${migration.name} failed (the next start runs it again): ${(error as Error).message}`, migration.name, { cause: error });
      }
    }
    await client.query("RESET lock_timeout");
    await client.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, started_at, applied_steps_count)
       VALUES ($1, $2, now(), $3, now(), 1)`,
      [id, migration.checksum, migration.name],
    );
    return;
  }
  try {
    await client.query("BEGIN");
    await client.query(migration.sql);
    await client.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, started_at, applied_steps_count)
       VALUES ($1, $2, now(), $3, now(), 1)`,
      [id, migration.checksum, migration.name],
    );
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    // The connection died, not the migration: its transaction rolled back with it and
    // nothing can be recorded, so trying again later is safe.
    if (isOutage(error)) throw error;
    // Recorded as failed, like Prisma does, so the next start stops instead of half-applying.
    await client
      .query(
        `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, logs, started_at, applied_steps_count)
         VALUES ($1, $2, $3, $4, now(), 0)`,
        [id, migration.checksum, migration.name, String((error as Error).message)],
      )
      .catch(() => undefined);
    throw new MigrationError(`migration ${migration.name} failed: ${(error as Error).message}`, migration.name, { cause: error });
  }
}

/**
 * The statements of a no-transaction migration: split after each `;` that ends a line.
 * Those migrations are ours and hold plain DDL (no functions or `;` inside strings).
 */
export function splitStatements(sql: string): string[] {
  return sql
    .split(/;[ \t]*(?:--[^\n]*)?\n/)
    .map((s) => s.replace(/^(\s*--[^\n]*\n)+/g, "").trim())
    .filter((s) => s.length > 0 && !/^(--[^\n]*\s*)*$/.test(s));
}

/** Of `expected` (migration names), those the database has not finished applying. */
export async function pendingMigrations(client: Pick<pg.ClientBase, "query">, expected: string[]): Promise<string[]> {
  let applied: Set<string>;
  try {
    const rows = await client.query<{ migration_name: string }>(
      `SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
    );
    applied = new Set(rows.rows.map((r) => r.migration_name));
  } catch (error) {
    if ((error as { code?: string }).code === "42P01") return expected;
    throw error;
  }
  return expected.filter((name) => !applied.has(name));
}
