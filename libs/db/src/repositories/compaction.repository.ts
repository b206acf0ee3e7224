import type { PrismaClient, Tx } from "../database";
import { jsonbParam, type FencedPart } from "../statements";
import { Prisma, type SessionCompaction } from "../generated/prisma/client";

export type Compaction = SessionCompaction;

/** Why a compaction was taken: the prompt passed the threshold, the API said it overflowed, or `/compact`. */
export type CompactionReason = "threshold" | "overflow" | "command";

export interface NewCompaction {
  id: string;
  sessionId: string;
  fromSeq: bigint;
  throughSeq: bigint;
  coveredTurns: number;
  summary: string;
  /** What the covered turns' envelopes say (time range, chats, roles), merged over the checkpoints. */
  facts: Record<string, unknown>;
  tokensBefore: number;
  tokensAfter: number;
  model: string;
  reason: CompactionReason;
  runId: string;
}

/** History compaction checkpoints (docs/compaction.md): written in a run's commit, never updated. */
export class CompactionRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** The session's newest checkpoint (the one the context starts from), if any. */
  latest(sessionId: string, tx?: Tx): Promise<Compaction | null> {
    return (tx ?? this.prisma).sessionCompaction.findFirst({ where: { sessionId }, orderBy: { throughSeq: "desc" } });
  }

  /**
   * What a history page marks: the newest checkpoint and the turns each checkpoint
   * summarized (a handful of rows even for a long session); null without a checkpoint.
   */
  async forHistory(sessionId: string): Promise<{ newest: Compaction; summarized: { fromSeq: bigint; throughSeq: bigint }[] } | null> {
    const [newest, summarized] = await Promise.all([
      this.latest(sessionId),
      this.prisma.sessionCompaction.findMany({ where: { sessionId }, orderBy: { throughSeq: "asc" }, select: { fromSeq: true, throughSeq: true } }),
    ]);
    return newest && { newest, summarized };
  }

  /**
   * The checkpoint as a part of a run's one-statement commit. The same cut twice (a run
   * retried after its commit was in) is one row.
   */
  insertPart(c: NewCompaction): FencedPart {
    return (fence) => Prisma.sql`
      INSERT INTO session_compactions (id, session_id, from_seq, through_seq, covered_turns, summary, facts, tokens_before, tokens_after, model, reason, run_id)
      SELECT ${c.id}::uuid, ${c.sessionId}::uuid, ${c.fromSeq}::bigint, ${c.throughSeq}::bigint, ${c.coveredTurns}::int, ${c.summary}, ${jsonbParam(c.facts)}::jsonb,
             ${c.tokensBefore}::int, ${c.tokensAfter}::int, ${c.model}, ${c.reason}, ${c.runId}::uuid
       WHERE ${fence}
      ON CONFLICT (session_id, through_seq) DO NOTHING`;
  }

  /** `/reset`: a summary of turns that are gone goes with them. */
  async clear(sessionId: string, tx: Tx): Promise<void> {
    await tx.sessionCompaction.deleteMany({ where: { sessionId } });
  }

  async insert(c: NewCompaction, tx: Tx): Promise<void> {
    await tx.$executeRaw(this.insertPart(c)(Prisma.sql`true`));
  }
}
