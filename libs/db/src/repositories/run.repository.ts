import type { Database } from "../database";
import type { Chat, Session, SessionCompaction, Turn } from "../generated/prisma/client";
import { inboundRecordOf, type InboundRecord } from "./inbound-message.repository";
import { chatOf, sessionOf, type ChatJson, type SessionJson } from "./session.repository";

/** What a run of a chat's lane reads before it calls the model. */
export interface ChatRunRead {
  /** Null before the chat's first message was stored. */
  chat: Chat | null;
  /** The chat's current session; null on first contact (none yet). */
  session: Session | null;
  /** The run's inbound messages, in the order asked for; missing ids are skipped. */
  inbound: InboundRecord[];
  /** The current session's newest compaction checkpoint, if it has one. */
  compaction: SessionCompaction | null;
  /** The current session's turns after that checkpoint's cut (the last `historyLimit` of them), oldest first. */
  history: Turn[];
}

export interface LaneRunSummary {
  runId: string;
  /** The kind of the run's first item (`inbound`, `agent_event`, `scheduled_turn`). */
  kind: string;
  status: string;
  startedAt: Date;
  finishedAt: Date | null;
}

/**
 * Lane runs: the agent run's hot-path read, and the runs a session's lane had. It goes to the pg pool directly: it runs once per run, and
 * one statement through pg costs a fraction of the three Prisma queries it replaces
 * (docs/data-access.md).
 */
export class RunRepository {
  private readonly pool: Database["pool"];
  private readonly statements: Database["statements"];

  constructor(db: Pick<Database, "pool" | "statements">) {
    this.pool = db.pool;
    this.statements = db.statements;
  }

  /**
   * The chat, its current session, the run's inbound messages, the session's newest
   * compaction checkpoint and the turns after its cut (at most `historyLimit`), in one statement. `seq` leaves as text (JSON has no bigint), so
   * the history is ordered by its number, not its text.
   *
   * The session is compared as a value (`= (SELECT current_session_id FROM c)`), not joined:
   * the turns are then read backwards from the newest through the index on (session_id, seq),
   * `historyLimit` of them. Joined, the planner may read every turn since the cut and sort
   * them, or walk the index of every session's turns by seq, and turns are kept for good.
   */
  async readChatRun(address: string, inboundIds: readonly string[], historyLimit: number): Promise<ChatRunRead> {
    const { rows } = await this.statements.query<{ chat: ChatJson | null; session: SessionJson | null; inbound: InboundJson[]; compaction: CompactionJson | null; history: TurnJson[] }>(`WITH c AS (SELECT * FROM chats WHERE address = $1),
            k AS (SELECT k.id, k.session_id, k.from_seq::text AS from_seq, k.through_seq::text AS through_seq, k.covered_turns, k.summary, k.facts,
                         k.tokens_before, k.tokens_after, k.model, k.reason, k.run_id, k.created_at
                    FROM session_compactions k WHERE k.session_id = (SELECT current_session_id FROM c)
                   ORDER BY k.through_seq DESC LIMIT 1)
       SELECT (SELECT row_to_json(c) FROM c) AS chat,
              (SELECT row_to_json(k) FROM k) AS compaction,
              (SELECT row_to_json(s) FROM sessions s JOIN c ON s.id = c.current_session_id) AS session,
              (SELECT coalesce(json_agg(json_build_object('id', m.id, 'channel', m.channel, 'chat_address', m.chat_address,
                                                          'message', m.message, 'received_at', m.received_at)), '[]'::json)
                 FROM inbound_messages m WHERE m.id = ANY($2::uuid[])) AS inbound,
              (SELECT coalesce(json_agg(row_to_json(t) ORDER BY t.seq::bigint), '[]'::json)
                 FROM (SELECT t.id, t.seq::text AS seq, t.session_id, t.role, t.content, t.metadata, t.source, t.inbound_message_id, t.run_id, t.created_at
                         FROM turns t
                        WHERE t.session_id = (SELECT current_session_id FROM c)
                          AND t.seq > coalesce((SELECT k.through_seq::bigint FROM k), 0)
                        ORDER BY t.seq DESC LIMIT $3) t) AS history`,
      [address, inboundIds, historyLimit],
    );
    const row = rows[0]!;
    const byId = new Map(
      row.inbound.map((m) => [m.id, inboundRecordOf({ id: m.id, channel: m.channel, chatAddress: m.chat_address, message: m.message, receivedAt: new Date(m.received_at) })]),
    );
    return {
      chat: row.chat && chatOf(row.chat),
      session: row.session && sessionOf(row.session),
      inbound: inboundIds.flatMap((id) => byId.get(id) ?? []),
      compaction: row.compaction && compactionOf(row.compaction),
      history: row.history.map(turnOf),
    };
  }

  /** The latest runs of a session's lane, newest first. */
  async recentRuns(laneKey: string, limit: number): Promise<LaneRunSummary[]> {
    const { rows } = await this.pool.query<{ id: string; kind: string | null; status: string; started_at: Date; finished_at: Date | null }>(
      `SELECT r.id::text AS id, r.status, r.started_at, r.finished_at,
              (SELECT li.kind FROM lane_items li WHERE li.lane_key = r.lane_key AND li.run_id = r.id ORDER BY li.seq LIMIT 1) AS kind
         FROM lane_runs r WHERE r.lane_key = $1
        ORDER BY r.started_at DESC LIMIT $2`,
      [laneKey, limit],
    );
    return rows.map((r) => ({ runId: r.id, kind: r.kind ?? "unknown", status: r.status, startedAt: r.started_at, finishedAt: r.finished_at }));
  }
}

// Rows as row_to_json renders them: snake_case columns, instants as ISO strings.
interface InboundJson {
  id: string;
  channel: string;
  chat_address: string;
  message: unknown;
  received_at: string;
}
interface CompactionJson {
  id: string;
  session_id: string;
  from_seq: string;
  through_seq: string;
  covered_turns: number;
  summary: string;
  facts: SessionCompaction["facts"];
  tokens_before: number;
  tokens_after: number;
  model: string;
  reason: string;
  run_id: string | null;
  created_at: string;
}

function compactionOf(k: CompactionJson): SessionCompaction {
  return {
    id: k.id,
    sessionId: k.session_id,
    fromSeq: BigInt(k.from_seq),
    throughSeq: BigInt(k.through_seq),
    coveredTurns: k.covered_turns,
    summary: k.summary,
    facts: k.facts,
    tokensBefore: k.tokens_before,
    tokensAfter: k.tokens_after,
    model: k.model,
    reason: k.reason,
    runId: k.run_id,
    createdAt: new Date(k.created_at),
  };
}

interface TurnJson {
  id: string;
  seq: string;
  session_id: string;
  role: string;
  content: string;
  metadata: Turn["metadata"];
  source: string;
  inbound_message_id: string | null;
  run_id: string | null;
  created_at: string;
}

const turnOf = (t: TurnJson): Turn => ({
  id: t.id,
  seq: BigInt(t.seq),
  sessionId: t.session_id,
  role: t.role,
  content: t.content,
  metadata: t.metadata,
  source: t.source,
  inboundMessageId: t.inbound_message_id,
  runId: t.run_id,
  createdAt: new Date(t.created_at),
});
