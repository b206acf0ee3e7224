import { DEFAULT_SEND_POLICY, SendPolicy, type SessionEventMode, type SessionEventStatus, type SessionVisibility } from "@nahida/contracts";
import type { PrismaClient, Tx } from "../database";
import type { SessionEvent } from "../generated/prisma/client";

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

/** A session as `sessions_list` shows it: its chat, its lane's activity. */
export interface SessionOverview {
  sessionId: string;
  target: string | null;
  channel: string | null;
  displayName: string | null;
  parentId: string | null;
  hasActiveRun: boolean;
  queueDepth: number;
  lastActiveAt: Date;
}

export interface LaneRunSummary {
  runId: string;
  /** The kind of the run's first item (`inbound`, `agent_event`, `scheduled_turn`). */
  kind: string;
  status: string;
  startedAt: Date;
  finishedAt: Date | null;
}

const SEND_POLICY = "send";

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

/**
 * Events between sessions (`sessions_send`, operator events), what agents may see of other
 * sessions, and the send policy document.
 */
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
    // One statement: read apart, the target's commit could land between the two reads and
    // a done event would read as queued.
    const [row] = await this.prisma.$queryRaw<(SessionEventRow & { item_status: string | null; item_run: string | null; item_error: string | null })[]>`
      SELECT e.id::text AS id, e.session_id::text AS session_id, e.source, e.from_session_id::text AS from_session_id, e.content, e.mode, e.depth,
             e.status, e.reply, e.error, e.run_id::text AS run_id, e.created_at, e.finished_at,
             li.status AS item_status, li.run_id::text AS item_run, li.error AS item_error
        FROM session_events e LEFT JOIN lane_items li ON li.kind = 'agent_event' AND li.ref_id = e.id::text
       WHERE e.id = ${id}::uuid`;
    if (!row) return null;
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

  /** Records how the target's run answered, in that run's commit. */
  async finish(id: string, outcome: { status: "done" | "failed"; reply: string | null; error: string | null; runId: string; at: Date }, tx: Tx): Promise<void> {
    await tx.sessionEvent.updateMany({
      where: { id, status: "queued" },
      data: { status: outcome.status, reply: outcome.reply, error: outcome.error, runId: outcome.runId, finishedAt: outcome.at },
    });
  }

  /**
   * Whether `viewer` may see `sessionId`: its own session; under `tree` also its children;
   * under `all` any session.
   */
  async canSee(viewer: string, sessionId: string, visibility: SessionVisibility): Promise<boolean> {
    if (visibility === "all") return (await this.prisma.session.count({ where: { id: sessionId } })) > 0;
    if (viewer === sessionId) return true;
    if (visibility === "self") return false;
    return (await this.prisma.session.count({ where: { id: sessionId, parentId: viewer } })) > 0;
  }

  /**
   * The sessions `viewer` may see, most recently active first, with their chat and their
   * lane's activity in one statement.
   */
  async overview(
    viewer: string,
    visibility: SessionVisibility,
    filter: { channels?: readonly string[]; activeSince?: Date; limit: number; sessionId?: string },
  ): Promise<SessionOverview[]> {
    const rows = await this.prisma.$queryRaw<
      {
        id: string;
        chat_address: string | null;
        channel: string | null;
        display_name: string | null;
        parent_id: string | null;
        active: boolean;
        depth: number;
        last_activity_at: Date;
      }[]
    >`
      SELECT s.id::text AS id, s.chat_address, s.channel, c.display_name, s.parent_id::text AS parent_id,
             EXISTS (SELECT 1 FROM lane_runs r WHERE r.lane_key = s.lane_key AND r.status = 'running') AS active,
             (SELECT count(*)::int FROM lane_items li WHERE li.lane_key = s.lane_key AND li.status = 'pending') AS depth,
             s.last_activity_at
        FROM sessions s LEFT JOIN chats c ON c.address = s.chat_address
       WHERE (${visibility} = 'all' OR s.id = ${viewer}::uuid OR (${visibility} = 'tree' AND s.parent_id = ${viewer}::uuid))
         AND (${filter.sessionId ?? null}::uuid IS NULL OR s.id = ${filter.sessionId ?? null}::uuid)
         AND (${filter.channels ? [...filter.channels] : null}::text[] IS NULL OR s.channel = ANY(${filter.channels ? [...filter.channels] : null}::text[]))
         AND (${filter.activeSince ?? null}::timestamptz IS NULL OR s.last_activity_at >= ${filter.activeSince ?? null}::timestamptz)
       ORDER BY s.last_activity_at DESC, s.id
       LIMIT ${filter.limit}`;
    return rows.map((r) => ({
      sessionId: r.id,
      target: r.chat_address,
      channel: r.channel,
      displayName: r.display_name,
      parentId: r.parent_id,
      hasActiveRun: r.active,
      queueDepth: r.depth,
      lastActiveAt: r.last_activity_at,
    }));
  }

  /** The latest runs of a session's lane, newest first. */
  async recentRuns(laneKey: string, limit: number): Promise<LaneRunSummary[]> {
    const rows = await this.prisma.$queryRaw<{ id: string; kind: string | null; status: string; started_at: Date; finished_at: Date | null }[]>`
      SELECT r.id::text AS id, r.status, r.started_at, r.finished_at,
             (SELECT li.kind FROM lane_items li WHERE li.run_id = r.id ORDER BY li.seq LIMIT 1) AS kind
        FROM lane_runs r WHERE r.lane_key = ${laneKey}
       ORDER BY r.started_at DESC LIMIT ${limit}`;
    return rows.map((r) => ({ runId: r.id, kind: r.kind ?? "unknown", status: r.status, startedAt: r.started_at, finishedAt: r.finished_at }));
  }

  /** The send policy; the default (allow everything) until an admin stores one. */
  async sendPolicy(): Promise<SendPolicy> {
    const row = await this.prisma.policy.findUnique({ where: { name: SEND_POLICY } });
    if (!row) return DEFAULT_SEND_POLICY;
    // Written only through `putSendPolicy`, which validates; a hand-edited bad document denies.
    const parsed = SendPolicy.safeParse(row.document);
    return parsed.success ? parsed.data : { default: "deny", rules: [] };
  }

  async putSendPolicy(policy: SendPolicy): Promise<void> {
    await this.prisma.policy.upsert({
      where: { name: SEND_POLICY },
      create: { name: SEND_POLICY, document: policy },
      update: { document: policy, updatedAt: new Date() },
    });
  }

  /** Sets a chat's `/send` override (null: inherit). */
  async setChatSendPolicy(address: string, value: "allow" | "deny" | null, tx?: Tx): Promise<void> {
    await (tx ?? this.prisma).chat.updateMany({ where: { address }, data: { sendPolicy: value } });
  }
}
