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

/** Runs a Prisma-built statement on the pg pool: the hot statements skip Prisma's query machinery (docs/data-access.md). */
export async function poolRows<T extends object>(pool: pg.Pool, statement: Prisma.Sql): Promise<T[]> {
  return (await pool.query<T>(statement.text, statement.values)).rows;
}
