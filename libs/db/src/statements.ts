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

const names = new Map<string, string>();
/** Texts are a few fixed shapes per statement; past this many the rest run unnamed. */
const MAX_NAMES = 1_000;

/**
 * Runs a hot statement as a named (server-side prepared) query: each connection parses it
 * once, and Postgres may keep a generic plan instead of planning the CTEs on every call. The
 * name is the text's hash, so one name never stands for two texts. A migration that changes
 * a result column's type leaves connections whose plan no longer fits ("cached plan must
 * not change result type"): such a connection is dropped and the statement runs once more,
 * unnamed. (A pooler in transaction mode must support prepared statements, as PgBouncer
 * does from 1.21 with `max_prepared_statements`.)
 */
export async function queryPrepared<T extends object>(pool: pg.Pool, text: string, values: readonly unknown[]): Promise<pg.QueryResult<T>> {
  let name = names.get(text);
  if (name === undefined && names.size < MAX_NAMES) {
    name = `n_${createHash("sha1").update(text).digest("hex").slice(0, 20)}`;
    names.set(text, name);
  }
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

/** Runs a Prisma-built statement on the pg pool: the hot statements skip Prisma's query machinery (docs/data-access.md). */
export async function poolRows<T extends object>(pool: pg.Pool, statement: Prisma.Sql): Promise<T[]> {
  return (await queryPrepared<T>(pool, statement.text, statement.values)).rows;
}
