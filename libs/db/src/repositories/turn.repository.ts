import type { TurnRole } from "@nahida/contracts";
import type { PrismaClient, Tx } from "../database";
import { jsonbParam, type FencedPart } from "../statements";
import { Prisma, type Turn } from "../generated/prisma/client";

export type { TurnRole } from "@nahida/contracts";

export interface NewTurn {
  role: TurnRole;
  content: string;
  /** message_context for user turns, tool_calls / tool_call_id for tool traffic. */
  metadata?: Record<string, unknown>;
  source?: string;
  inboundMessageId?: string;
  runId?: string;
}

/** A session's history. Turns are only appended; `/reset` is the one bulk delete. */
export class TurnRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** With `touchSession`, the session's `last_activity_at` is set in the same statement. */
  async append(sessionId: string, turns: NewTurn[], tx: Tx, options: { touchSession?: Date } = {}): Promise<void> {
    if (turns.length === 0) return;
    await tx.$executeRaw`
      WITH added AS (${insertTurns(sessionId, turns, Prisma.sql`true`)} RETURNING 1)
      UPDATE sessions SET last_activity_at = ${options.touchSession ?? null}::timestamptz
       WHERE id = ${sessionId}::uuid AND ${options.touchSession ?? null}::timestamptz IS NOT NULL AND EXISTS (SELECT 1 FROM added)`;
  }

  /**
   * `append` with `touchSession` as parts of a run's one-statement commit: the turns (none
   * is fine) and the session's last activity.
   */
  appendParts(sessionId: string, turns: NewTurn[], touchSession: Date): FencedPart[] {
    const touch: FencedPart = (fence) =>
      Prisma.sql`UPDATE sessions SET last_activity_at = ${touchSession}::timestamptz WHERE id = ${sessionId}::uuid AND ${fence}`;
    return turns.length === 0 ? [touch] : [(fence) => insertTurns(sessionId, turns, fence), touch];
  }

  /**
   * The turns after a compaction's cut (`afterSeq`; null: from the first), the newest
   * `limit` of them, oldest first: what the context is built from.
   */
  async after(sessionId: string, afterSeq: bigint | null, limit: number, tx?: Tx): Promise<Turn[]> {
    const rows = await (tx ?? this.prisma).turn.findMany({
      where: { sessionId, ...(afterSeq !== null ? { seq: { gt: afterSeq } } : {}) },
      orderBy: { seq: "desc" },
      take: limit,
    });
    return rows.reverse();
  }

  /** The last `limit` turns of a session, oldest first. */
  async recent(sessionId: string, limit: number, tx?: Tx): Promise<Turn[]> {
    const rows = await (tx ?? this.prisma).turn.findMany({
      where: { sessionId },
      orderBy: { seq: "desc" },
      take: limit,
    });
    return rows.reverse();
  }

  /**
   * A page of history counted from the newest turn: `offset` 0 is the latest `limit`
   * turns. Returned oldest first.
   */
  async page(sessionId: string, limit: number, offset: number): Promise<{ turns: Turn[]; total: number }> {
    const [rows, total] = await Promise.all([
      this.prisma.turn.findMany({ where: { sessionId }, orderBy: { seq: "desc" }, take: limit, skip: offset }),
      this.prisma.turn.count({ where: { sessionId } }),
    ]);
    return { turns: rows.reverse(), total };
  }

  async count(sessionId: string, tx?: Tx): Promise<number> {
    return (tx ?? this.prisma).turn.count({ where: { sessionId } });
  }

  async clear(sessionId: string, tx: Tx): Promise<number> {
    const { count } = await tx.turn.deleteMany({ where: { sessionId } });
    return count;
  }
}

/**
 * The INSERT of a batch of turns, rows only where `condition` holds. One statement for the
 * whole batch; rows are fed in the order given, so `seq` (taken from its sequence row by
 * row) keeps that order.
 */
function insertTurns(sessionId: string, turns: NewTurn[], condition: Prisma.Sql): Prisma.Sql {
  const rows = turns.map((turn) => ({
    role: turn.role,
    content: turn.content,
    metadata: turn.metadata ?? {},
    source: turn.source ?? (turn.role === "user" ? "user" : "agent"),
    inbound_message_id: turn.inboundMessageId ?? null,
    run_id: turn.runId ?? null,
  }));
  return Prisma.sql`
    INSERT INTO turns (id, session_id, role, content, metadata, source, inbound_message_id, run_id)
    SELECT nahida_uuid_v7(), ${sessionId}::uuid, t.elem->>'role', t.elem->>'content', t.elem->'metadata', t.elem->>'source',
           (t.elem->>'inbound_message_id')::uuid, (t.elem->>'run_id')::uuid
      FROM jsonb_array_elements(${jsonbParam(rows)}::jsonb) WITH ORDINALITY AS t(elem, ord)
     WHERE ${condition}
     ORDER BY t.ord`;
}
