import { createHash } from "node:crypto";
import { storableJson } from "@nahida/contracts";
import type pg from "pg";
import type { Prisma } from "./generated/prisma/client";

/**
 * One write of a run's fenced commit, as the body of a data-modifying CTE. The lane store
 * puts every part into the one statement that locks the lane row and checks the lease
 * (`LaneStore.commitStatement`, docs/lanes.md). `fence` is the SQL condition "the lease is
 * still ours"; every part must AND it into its WHERE, so a run that lost its lane writes
 * nothing. Parts are built by the repositories that own their tables, never by callers.
 */
export type FencedPart = (fence: Prisma.Sql) => Prisma.Sql;

/**
 * The one step every JSON value takes on its way to Postgres: jsonb refuses a lone
 * surrogate and NUL, in keys as in values, so every string is made well formed
 * (`storableJson`, no recursion). A value nested deeper than the services accept at their
 * edges throws: nothing valid gets here that deep. For Prisma `Json` fields.
 */
export function pgJson<T>(value: T): T {
  const storable = storableJson(value);
  if (!storable.ok) throw new Error(`a JSON value for Postgres is ${storable.error}`);
  return storable.value;
}

/** JSON text for a `::jsonb` parameter, through {@link pgJson}. */
export function jsonbParam(value: unknown): string {
  return JSON.stringify(pgJson(value));
}

/** Texts are a few fixed shapes per statement; past this many the rest run unnamed. */
const MAX_NAMES = 1_000;

/**
 * The per-message path's way to Postgres (docs/data-access.md): statements built by the
 * repositories, run on the pool without Prisma's query machinery.
 */
export interface HotStatements {
  query<T extends object>(text: string, values: readonly unknown[]): Promise<pg.QueryResult<T>>;
  /** Runs a Prisma-built statement; its parameters stay bound. */
  rows<T extends object>(statement: Prisma.Sql): Promise<T[]>;
}

export interface HotStatementsOptions {
  /**
   * Named (server-side prepared) statements. Off behind a pooler in transaction mode
   * (PgBouncer 1.18): consecutive transactions of one client land on different server
   * connections, where a name prepared on another does not exist.
   */
  prepared: boolean;
}

/**
 * With `prepared`, each statement runs as a named query: each connection parses it once,
 * and Postgres may keep a generic plan instead of planning the CTEs on every call. The name
 * is the text's hash, so one name never stands for two texts. A migration that changes a
 * result column's type leaves connections whose plan no longer fits ("cached plan must not
 * change result type"): such a connection is dropped and the statement runs once more,
 * unnamed. Without, every statement is sent unnamed (parsed and planned each time).
 */
export function hotStatements(pool: pg.Pool, options: HotStatementsOptions): HotStatements {
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    if (!options.prepared) return undefined;
    let name = names.get(text);
    if (name === undefined && names.size < MAX_NAMES) {
      name = `n_${createHash("sha1").update(text).digest("hex").slice(0, 20)}`;
      names.set(text, name);
    }
    return name;
  };
  async function query<T extends object>(text: string, values: readonly unknown[]): Promise<pg.QueryResult<T>> {
    const name = nameOf(text);
    if (name === undefined) return pool.query<T>(text, [...values]);
    const client = await pool.connect();
    try {
      const result = await client.query<T>({ name, text, values: [...values] });
      client.release();
      return result;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      // 0A000: the plan's result type changed; 26000: the statement is gone on the server.
      const stale = code === "0A000" || code === "26000";
      client.release(stale ? (error as Error) : undefined);
      if (!stale) throw error;
      return pool.query<T>(text, [...values]);
    }
  }
  return {
    query,
    rows: async <T extends object>(statement: Prisma.Sql) => (await query<T>(statement.text, statement.values)).rows,
  };
}
