import { createHash } from "node:crypto";
import { wellFormed } from "@nahida/contracts";
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

/** JSON for a `::jsonb` parameter: jsonb refuses a lone surrogate, so strings are made well formed. */
export function jsonbParam(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === "string" ? wellFormed(v) : v));
}

const names = new Map<string, string>();

/**
 * A hot statement as a named (server-side prepared) query: each connection parses it once,
 * and Postgres may keep a generic plan instead of planning the CTEs on every call. The name
 * is the text's hash, so one name never stands for two texts. (A pooler in transaction mode
 * must support prepared statements, as PgBouncer does from 1.21 with `max_prepared_statements`.)
 */
export function prepared(text: string, values: readonly unknown[]): pg.QueryConfig {
  let name = names.get(text);
  if (name === undefined) {
    name = `n_${createHash("sha1").update(text).digest("hex").slice(0, 20)}`;
    // Texts are a few fixed shapes per statement; the bound only guards against a caller that is not.
    if (names.size < 1_000) names.set(text, name);
  }
  return { name, text, values: [...values] };
}

/** Runs a Prisma-built statement on the pg pool: the hot statements skip Prisma's query machinery (docs/data-access.md). */
export async function poolRows<T extends object>(pool: pg.Pool, statement: Prisma.Sql): Promise<T[]> {
  return (await pool.query<T>(prepared(statement.text, statement.values))).rows;
}
