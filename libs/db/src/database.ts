import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient } from "./generated/prisma/client";
import { listMigrationNames, pendingMigrations } from "./migrations/migration-runner";
import { hotStatements, type HotStatements } from "./statements";

export type { PrismaClient };
export type Tx = Omit<PrismaClient, "$connect" | "$disconnect" | "$on" | "$transaction" | "$extends">;

export interface DatabaseOptions {
  url: string;
  /** Connections in this process's pool. */
  poolSize?: number;
  /** Called when an idle pooled connection fails (server restart); the pool replaces it. */
  onPoolError?: (error: Error) => void;
  /**
   * What sits between this process and Postgres. `transaction`: a pooler in transaction
   * mode (PgBouncer), which hands each transaction to any server connection and refuses
   * startup options: no named statements, no `-c TimeZone=UTC` (the pooler's sessions must
   * be UTC already; {@link checkSessionTimeZone}). Default `none`: Postgres itself or a
   * pooler in session mode.
   */
  pooler?: DatabasePooler;
}

export type DatabasePooler = "none" | "transaction";

export interface Database {
  prisma: PrismaClient;
  pool: pg.Pool;
  /** The per-message path's statements, on `pool` (prepared unless a transaction pooler forbids it). */
  statements: HotStatements;
  /** Postgres answers and every migration on disk is applied. */
  checkReady(): Promise<{ ok: true } | { ok: false; reason: string }>;
  close(): Promise<void>;
}

export function createDatabase(options: DatabaseOptions): Database {
  const transactionPooler = options.pooler === "transaction";
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 5_000,
    // The driver adapter sends and reads timestamps as UTC wall time; a server or role with
    // another TimeZone would shift every instant compared with now() (expiry, ordering).
    // A transaction pooler refuses the option (PgBouncer: "unsupported startup parameter").
    ...(transactionPooler ? {} : { options: "-c TimeZone=UTC" }),
  });
  // Without a listener an idle client's error would crash the process.
  pool.on("error", options.onPoolError ?? (() => undefined));
  // A checked-out client has only the listeners of whoever holds it, and pg-pool's query
  // path listens `once`: a server restart (57P01) can emit a second error with nobody
  // listening, which kills the process. Every client keeps this one for its whole life; the
  // failure itself still reaches the holder as a rejected query, and the pool drops the client.
  pool.on("connect", (client) => {
    client.on("error", () => undefined);
  });
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  // The migrations on disk do not change while the process runs; readiness probes come
  // every few seconds, so the directory is listed once.
  let expectedMigrations: Promise<string[]> | undefined;
  return {
    prisma,
    pool,
    statements: hotStatements(pool, { prepared: !transactionPooler }),
    async checkReady() {
      let expected: string[];
      try {
        expected = await (expectedMigrations ??= listMigrationNames());
      } catch (error) {
        expectedMigrations = undefined;
        return { ok: false, reason: `migrations directory unreadable: ${(error as Error).message}` };
      }
      try {
        const pending = await pendingMigrations(pool, expected);
        if (pending.length > 0) return { ok: false, reason: `pending migrations: ${pending.join(", ")}` };
        return { ok: true };
      } catch (error) {
        return { ok: false, reason: `postgres unreachable: ${(error as Error).message}` };
      }
    },
    async close() {
      await prisma.$disconnect();
      await pool.end().catch(() => undefined);
    },
  };
}

/**
 * Null when this connection's session keeps time in UTC, else its TimeZone. Behind a
 * transaction pooler the services cannot set it themselves (no startup options, and a
 * session-level SET would stay on a server connection other clients share): the pooler's
 * database entry (`timezone=UTC` in PgBouncer) or the database's own setting must.
 */
export async function checkSessionTimeZone(pool: pg.Pool): Promise<string | null> {
  // UTC by its offset now and through the coming year (summer time, a zone that changed its
  // offset), whatever the zone is called (UTC, Etc/UTC, Zulu).
  const { rows } = await pool.query<{ zone: string; utc: boolean }>(
    `SELECT current_setting('TimeZone') AS zone,
            bool_and(t AT TIME ZONE current_setting('TimeZone') = t AT TIME ZONE 'UTC') AS utc
       FROM generate_series(now(), now() + interval '1 year', interval '1 month') AS t`,
  );
  return rows[0]!.utc ? null : rows[0]!.zone;
}

/**
 * True when Postgres refused the data itself (SQLSTATE class 22 data exception or 23
 * integrity violation): retrying the same statement cannot succeed. Connection failures
 * and timeouts are not data errors.
 */
export function isDataError(error: unknown): boolean {
  const meta = (error as { meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } } } | null)?.meta;
  const code = meta?.driverAdapterError?.cause?.originalCode ?? (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^2[23][0-9A-Z]{3}$/.test(code);
}

/**
 * True when Postgres ended the transaction to break a deadlock or a serialization conflict
 * (40P01, 40001): the same work can succeed when tried again.
 */
export function isConflictAbort(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const meta = (e as { meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } }; code?: unknown });
    const codes = [meta.meta?.driverAdapterError?.cause?.originalCode, meta.code];
    if (codes.some((c) => c === "40P01" || c === "40001" || c === "P2034")) return true;
  }
  return false;
}

/** SQLSTATE classes and codes that mean the database (not the statement) failed. */
const OUTAGE_CODE = /^(08[0-9A-Z]{3}|53[0-9A-Z]{3}|57P0[1-3])$/;
const OUTAGE_NODE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN", "P1001", "P1002", "P1008", "P1017", "P2024"]);
const OUTAGE_MESSAGE =
  /Connection terminated|not queryable|connection (is )?closed|terminating connection|too many clients|timeout exceeded when trying to connect|Can't reach database server|Reached the max retries per request limit|Connection is closed/i;

/**
 * True when `error` says Postgres or Redis could not be reached or dropped the connection
 * (a restart, a full connection table): an outage to wait out, not a fault of the work at
 * hand. Looks through Prisma's wrapping and the error's causes.
 */
export function isOutage(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const meta = (e as { meta?: { driverAdapterError?: { cause?: { originalCode?: unknown; kind?: unknown } } } }).meta;
    const sqlState = [meta?.driverAdapterError?.cause?.originalCode, (e as { code?: unknown }).code];
    if (sqlState.some((code) => typeof code === "string" && OUTAGE_CODE.test(code))) return true;
    // Socket codes count only on the error itself (as pg and Prisma throw them): deeper in a
    // chain they are some other client's, such as the LLM client's fetch failing.
    const code = (e as { code?: unknown }).code;
    if (depth === 0 && typeof code === "string" && OUTAGE_NODE_CODES.has(code)) return true;
    const kind = meta?.driverAdapterError?.cause?.kind;
    if (typeof kind === "string" && /NotReachable|ConnectionClosed|TooManyConnections|SocketTimeout/i.test(kind)) return true;
    if (e instanceof Error && OUTAGE_MESSAGE.test(e.message)) return true;
  }
  return false;
}
