import type { SessionEventMode, SessionEventStatus } from "@nahida/contracts";
import type { PrismaClient, Tx } from "../database";
import { Prisma, type SessionEvent } from "../generated/prisma/client";

export interface NewSessionEvent {
  id: string;
  sessionId: string;
  source: string;
  fromSessionId: string | null;
  content: string;
  mode: SessionEventMode;
  depth: number;
}

/** An event with where it stands: `running` and a lane failure are read off its lane item. */
export interface SessionEventState {
  event: SessionEvent;
  status: SessionEventStatus;
  runId: string | null;
  error: string | null;
}

interface SessionEventRow {
  id: string;
  session_id: string;
  source: string;
  from_session_id: string | null;
  content: string;
  mode: string;
  depth: number;
  status: string;
  reply: string | null;
  error: string | null;
  run_id: string | null;
  created_at: Date;
  finished_at: Date | null;
}

/** Events between sessions (`sessions_send`, operator events): `session_events`. */
export class SessionEventRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Writes events in the sender's transaction; `enqueue` ones start `queued`. */
  async create(events: readonly NewSessionEvent[], tx: Tx): Promise<void> {
    if (events.length === 0) return;
    await tx.sessionEvent.createMany({
      data: events.map((e) => ({ ...e, status: e.mode === "enqueue" ? "queued" : "recorded" })),
      skipDuplicates: true,
    });
  }

  async get(id: string, tx?: Tx): Promise<SessionEvent | null> {
    return (tx ?? this.prisma).sessionEvent.findUnique({ where: { id } });
  }

  async getMany(ids: readonly string[]): Promise<SessionEvent[]> {
    if (ids.length === 0) return [];
    return this.prisma.sessionEvent.findMany({ where: { id: { in: [...ids] } } });
  }

  /**
   * The event and its state in one read: a queued event whose lane item runs is `running`,
   * one whose item failed for good is `failed` with the lane's error.
   */
  async state(id: string): Promise<SessionEventState | null> {
    const [state] = await this.states(Prisma.sql`e.id = ${id}::uuid`, 1);
    return state ?? null;
  }

  /** A session's newest events (those sent to it), newest first, each with its state. */
  forSession(sessionId: string, limit: number): Promise<SessionEventState[]> {
    return this.states(Prisma.sql`e.session_id = ${sessionId}::uuid`, limit);
  }

  private async states(where: Prisma.Sql, limit: number): Promise<SessionEventState[]> {
    // One statement: read apart, the target's commit could land between the two reads and
    // a done event would read as queued.
    const rows = await this.prisma.$queryRaw<(SessionEventRow & { item_status: string | null; item_run: string | null; item_error: string | null })[]>`
      SELECT e.id::text AS id, e.session_id::text AS session_id, e.source, e.from_session_id::text AS from_session_id, e.content, e.mode, e.depth,
             e.status, e.reply, e.error, e.run_id::text AS run_id, e.created_at, e.finished_at,
             li.status AS item_status, li.run_id::text AS item_run, li.error AS item_error
        FROM session_events e LEFT JOIN lane_items li ON li.kind = 'agent_event' AND li.ref_id = e.id::text
       WHERE ${where}
       ORDER BY e.created_at DESC, e.id DESC
       LIMIT ${limit}`;
    return rows.map(stateOf);
  }

  /** Records how the target's run answered, in that run's commit. */
  async finish(id: string, outcome: { status: "done" | "failed"; reply: string | null; error: string | null; runId: string; at: Date }, tx: Tx): Promise<void> {
    await tx.sessionEvent.updateMany({
      where: { id, status: "queued" },
      data: { status: outcome.status, reply: outcome.reply, error: outcome.error, runId: outcome.runId, finishedAt: outcome.at },
    });
  }

}

function stateOf(row: SessionEventRow & { item_status: string | null; item_run: string | null; item_error: string | null }): SessionEventState {
  const event: SessionEvent = {
    id: row.id,
    sessionId: row.session_id,
    source: row.source,
    fromSessionId: row.from_session_id,
    content: row.content,
    mode: row.mode,
    depth: row.depth,
    status: row.status,
    reply: row.reply,
    error: row.error,
    runId: row.run_id,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
  };
  if (event.status !== "queued") return { event, status: event.status as SessionEventStatus, runId: event.runId, error: event.error };
  if (row.item_status === "failed") return { event, status: "failed", runId: row.item_run, error: row.item_error ?? "the run failed" };
  if (row.item_status === "running") return { event, status: "running", runId: row.item_run, error: null };
  return { event, status: "queued", runId: null, error: null };
}
