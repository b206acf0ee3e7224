import { Prisma } from "./generated/prisma/client";

export interface LaneAppendSql {
  laneKey: string;
  /** The item's kind (`encodeLaneItem` for the kinds in contracts). */
  kind: string;
  /** The item's ref: a parameter, or a column of `from`. */
  refId: Prisma.Sql;
  traceparent: string | null;
  /** Rows the append reads (`inserted`); one row, or none to append nothing. Default: one row. */
  from?: Prisma.Sql;
  /** Appends only where this holds over `from`. Default: always. */
  when?: Prisma.Sql;
}

/**
 * The lane-sequence SQL, in one place: the CTEs `lane` (the lane row, created on first use,
 * its `last_seq` incremented under its row lock) and `item` (the item at that sequence
 * number; `(kind, ref_id)` is unique, so a repeat appends nothing and `item` is empty). The
 * lock is held until the statement's transaction ends, so sequence order is commit order
 * within a lane (docs/lanes.md). `item` returns `id` and `seq`; `lane` returns `last_seq` and the lane's `mode`.
 */
export function laneAppendCtes(o: LaneAppendSql): Prisma.Sql {
  const from = o.from ?? Prisma.sql`(SELECT 1) AS one`;
  const when = o.when ?? Prisma.sql`true`;
  return Prisma.sql`
    lane AS (
      INSERT INTO lanes (key, last_seq, updated_at)
      SELECT ${o.laneKey}::text, 1, now() FROM ${from} WHERE ${when}
      ON CONFLICT (key) DO UPDATE SET last_seq = lanes.last_seq + 1, updated_at = now()
      RETURNING last_seq, mode
    ), item AS (
      INSERT INTO lane_items (id, lane_key, seq, kind, ref_id, traceparent)
      SELECT nahida_uuid_v7(), ${o.laneKey}::text, lane.last_seq, ${o.kind}::text, ${o.refId}, ${o.traceparent}::text FROM lane, ${from}
      ON CONFLICT (kind, ref_id) DO NOTHING
      RETURNING id::text AS id, seq
    )`;
}
