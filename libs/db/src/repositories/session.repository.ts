import { randomUUID } from "node:crypto";
import type { SessionVisibility, TriggerMode } from "@nahida/contracts";
import type { PrismaClient, Tx } from "../database";
import type { Chat, Session } from "../generated/prisma/client";

const CHAT_LANE_PREFIX = "chat:";

/** A chat's sessions all share the chat's lane, so a chat never has two runs at once. */
export const laneKeyForChat = (chatAddress: string): string => `${CHAT_LANE_PREFIX}${chatAddress}`;

/** The chat address a chat lane serves; null for lanes of sessions without a chat. */
export const chatOfLane = (laneKey: string): string | null =>
  laneKey.startsWith(CHAT_LANE_PREFIX) ? laneKey.slice(CHAT_LANE_PREFIX.length) : null;

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

/** Chats and their sessions: `chats`, `sessions`, and which sessions a session may see. */
export class SessionRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Creates the chat on first sight and keeps its display name current. Reads first: on
   * the hot path the chat exists and nothing needs writing.
   */
  async ensureChat(address: string, channel: string, displayName: string | undefined, tx?: Tx): Promise<Chat> {
    const existing = await (tx ?? this.prisma).chat.findUnique({ where: { address } });
    if (existing && (displayName === undefined || existing.displayName === displayName)) return existing;
    return (tx ?? this.prisma).chat.upsert({
      where: { address },
      create: { address, channel, displayName: displayName ?? null },
      update: displayName === undefined ? {} : { displayName },
    });
  }

  /**
   * The chat and its current session, created on first use (one read when both exist).
   * Callers run inside the chat's lane, so two runs never create competing sessions.
   */
  async resolve(address: string, channel: string): Promise<{ chat: Chat; session: Session }> {
    // One statement (Prisma's `include` would be two); a chat lane's run reads this with its messages (RunRepository).
    const [found] = await this.prisma.$queryRaw<ChatWithSession[]>`
      SELECT row_to_json(c) AS chat, row_to_json(s) AS session
        FROM chats c JOIN sessions s ON s.id = c.current_session_id
       WHERE c.address = ${address}`;
    if (found) return { chat: chatOf(found.chat), session: sessionOf(found.session) };
    return this.startChatSession(address, channel);
  }

  /**
   * First contact: the chat's first session, made current, the chat created if no message
   * stored it yet. One statement; the foreign key from the chat to the session is checked
   * at its end, when both rows are in. Callers run inside the chat's lane and found no
   * current session.
   */
  async startChatSession(address: string, channel: string): Promise<{ chat: Chat; session: Session }> {
    // Random, unlike the ledger's ids: a session is named by a prefix of its id (`/status`,
    // the send policy's session_prefix), which a time-ordered id would share with its neighbours.
    const id = randomUUID();
    const [row] = await this.prisma.$queryRaw<ChatWithSession[]>`
      WITH s AS (
        INSERT INTO sessions (id, lane_key, chat_address, channel)
        VALUES (${id}::uuid, ${laneKeyForChat(address)}, ${address}, ${channel})
        RETURNING *
      ), c AS (
        INSERT INTO chats (address, channel, current_session_id) VALUES (${address}, ${channel}, ${id}::uuid)
        ON CONFLICT (address) DO UPDATE SET current_session_id = EXCLUDED.current_session_id, updated_at = now()
        RETURNING *
      )
      SELECT row_to_json(c) AS chat, row_to_json(s) AS session FROM c JOIN s ON true`;
    if (!row) throw new Error(`chat ${address}: the first session was not created`);
    return { chat: chatOf(row.chat), session: sessionOf(row.session) };
  }

  /**
   * The session a lane's work goes to: for a chat lane the chat's current session (chat and
   * session created on first contact); for any other lane its session (a cron job's
   * isolated or named one talks to its chat without being the chat's current session; a
   * session without a chat has `chat` null). Null for a lane no session belongs to. Callers
   * run inside the lane, so two runs never create competing sessions.
   */
  async resolveLane(laneKey: string): Promise<{ chat: Chat | null; session: Session } | null> {
    const address = chatOfLane(laneKey);
    if (address !== null) return this.resolve(address, address.split(":", 1)[0]!);
    const session = await this.prisma.session.findFirst({ where: { laneKey }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] });
    if (!session) return null;
    if (!session.chatAddress || !session.channel) return { chat: null, session };
    return { chat: await this.ensureChat(session.chatAddress, session.channel, undefined), session };
  }

  /**
   * The session of a lane that is not a chat's lane, created on first use for `chatAddress`.
   * Callers hold the lane row's lock (they just appended to it), so two callers never
   * create two sessions for one lane.
   */
  async ensureLaneSession(laneKey: string, chat: { address: string; channel: string; title?: string }, tx: Tx, id?: string): Promise<Session> {
    const existing = await tx.session.findFirst({ where: { laneKey }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] });
    if (existing) return existing;
    await this.ensureChat(chat.address, chat.channel, undefined, tx);
    return tx.session.create({
      data: { ...(id ? { id } : {}), laneKey, chatAddress: chat.address, channel: chat.channel, ...(chat.title ? { title: chat.title } : {}) },
    });
  }

  /**
   * Locks the lane row of a session until `tx` ends. A run commits its turns under this lock,
   * so an event written under it never lands between a tool call and its result (the model
   * API would reject that history). False when the session does not exist.
   */
  async lockLaneOf(sessionId: string, tx: Tx): Promise<boolean> {
    const session = await tx.session.findUnique({ where: { id: sessionId }, select: { laneKey: true } });
    if (!session) return false;
    await tx.$queryRaw`SELECT 1 FROM lanes WHERE key = ${session.laneKey} FOR UPDATE`;
    return true;
  }

  /** Starts a fresh session for the chat (`/new`); the old one stays in history. */
  async rotate(address: string, channel: string, tx: Tx, id?: string): Promise<Session> {
    await this.ensureChat(address, channel, undefined, tx);
    const session = await tx.session.create({
      data: { ...(id ? { id } : {}), laneKey: laneKeyForChat(address), chatAddress: address, channel },
    });
    await tx.chat.update({ where: { address }, data: { currentSessionId: session.id } });
    return session;
  }

  async touch(id: string, at: Date, tx: Tx): Promise<void> {
    await tx.session.updateMany({ where: { id }, data: { lastActivityAt: at } });
  }

  async getChat(address: string, tx?: Tx): Promise<Chat | null> {
    return (tx ?? this.prisma).chat.findUnique({ where: { address } });
  }

  async get(id: string, tx?: Tx): Promise<Session | null> {
    return (tx ?? this.prisma).session.findUnique({ where: { id } });
  }

  /** Sessions by most recent activity, filtered by channel, activity and status. */
  /** A page of sessions, most recently active first; `chatContains` matches part of the chat address, any case. */
  async list(filter: { channel?: string; activeSince?: Date; status?: string; chatContains?: string; limit: number; offset: number }): Promise<{ sessions: Session[]; total: number }> {
    const where = {
      ...(filter.channel ? { channel: filter.channel } : {}),
      // Prisma passes `contains` to LIKE as it is: % and _ would match anything.
      ...(filter.chatContains ? { chatAddress: { contains: filter.chatContains.replace(/[\\%_]/g, "\\$&"), mode: "insensitive" as const } } : {}),
      ...(filter.activeSince ? { lastActivityAt: { gte: filter.activeSince } } : {}),
      ...(filter.status ? { status: filter.status } : {}),
    };
    const [sessions, total] = await Promise.all([
      this.prisma.session.findMany({ where, orderBy: [{ lastActivityAt: "desc" }, { id: "asc" }], take: filter.limit, skip: filter.offset }),
      this.prisma.session.count({ where }),
    ]);
    return { sessions, total };
  }

  async setTriggerMode(address: string, mode: TriggerMode, tx?: Tx): Promise<void> {
    await (tx ?? this.prisma).chat.update({ where: { address }, data: { triggerMode: mode } });
  }

  /** Sets a chat's `/send` override (null: inherit). */
  async setChatSendPolicy(address: string, value: "allow" | "deny" | null, tx?: Tx): Promise<void> {
    await (tx ?? this.prisma).chat.updateMany({ where: { address }, data: { sendPolicy: value } });
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
}

/** A chat and its current session, each as `row_to_json` renders it. */
interface ChatWithSession {
  chat: ChatJson;
  session: SessionJson;
}

// Rows as row_to_json renders them: snake_case columns, instants as ISO strings.
export interface ChatJson {
  address: string;
  channel: string;
  current_session_id: string | null;
  display_name: string | null;
  trigger_mode: string;
  send_policy: string | null;
  created_at: string;
  updated_at: string;
}

export interface SessionJson {
  id: string;
  lane_key: string;
  chat_address: string | null;
  channel: string | null;
  parent_id: string | null;
  title: string | null;
  status: string;
  settings: Session["settings"];
  created_at: string;
  last_activity_at: string;
}

export const chatOf = (c: ChatJson): Chat => ({
  address: c.address,
  channel: c.channel,
  currentSessionId: c.current_session_id,
  displayName: c.display_name,
  triggerMode: c.trigger_mode,
  sendPolicy: c.send_policy,
  createdAt: new Date(c.created_at),
  updatedAt: new Date(c.updated_at),
});

export const sessionOf = (s: SessionJson): Session => ({
  id: s.id,
  laneKey: s.lane_key,
  chatAddress: s.chat_address,
  channel: s.channel,
  parentId: s.parent_id,
  title: s.title,
  status: s.status,
  settings: s.settings,
  createdAt: new Date(s.created_at),
  lastActivityAt: new Date(s.last_activity_at),
});
