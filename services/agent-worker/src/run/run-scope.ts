import { parseChatAddress, type ChatType } from "@nahida/contracts";
import { chatOfLane, type Chat, type ChatRunRead, type RunRepository, type Session, type SessionRepository } from "@nahida/db";

/**
 * Where a run's answers go:
 * - `chat`: the session's chat (a reply quotes the message it answers in groups);
 * - `session`: another session, as an event turn with its source (a chatless session
 *   reporting to its parent);
 * - `none`: nowhere; the answer stays in the session's own history.
 */
export type RunOutput = { kind: "chat"; address: string } | { kind: "session"; sessionId: string } | { kind: "none" };

/** What a run works in: the lane's session, its chat if it has one, and where answers go. */
export interface RunScope {
  laneKey: string;
  session: Session;
  /** Null for a session without a chat: no replies, no "typing…", no chat commands. */
  chat: (Chat & { type: ChatType }) | null;
  output: RunOutput;
}

export interface ScopeReaderOptions {
  runs: RunRepository;
  sessions: SessionRepository;
  /** Turns of history the run's first agent call gets. */
  historyTurns: number;
}

/** A session's scope: its chat when it has one, else its parent when it has one. */
export function scopeOf(laneKey: string, session: Session, chat: Chat | null): RunScope {
  if (chat) {
    const address = parseChatAddress(chat.address);
    if (!address.ok) throw new Error(`chat ${chat.address} has a bad address: ${address.error.message}`);
    return { laneKey, session, chat: { ...chat, type: address.value.type }, output: { kind: "chat", address: chat.address } };
  }
  return { laneKey, session, chat: null, output: session.parentId ? { kind: "session", sessionId: session.parentId } : { kind: "none" } };
}

/**
 * How a lane key resolves to its scope. A chat's lane reads its chat, current session, the
 * run's inbound messages and the session's history in one statement (`read`); other lanes
 * read their session when the run has work ({@link ScopeReader.resolve}).
 */
export class ScopeReader {
  constructor(private readonly o: ScopeReaderOptions) {}

  /** The one read of a chat lane's run (null for other lanes), before the batch's rows are loaded. */
  async read(laneKey: string, inboundIds: readonly string[]): Promise<ChatRunRead | null> {
    const address = chatOfLane(laneKey);
    return address === null ? null : this.o.runs.readChatRun(address, inboundIds, this.o.historyTurns);
  }

  /**
   * The scope, creating a chat's first session on first contact; null for a lane no
   * session belongs to. Runs inside the lane, so two runs never create competing sessions.
   */
  async resolve(laneKey: string, read: ChatRunRead | null): Promise<RunScope | null> {
    const address = chatOfLane(laneKey);
    if (read && read.chat && read.session) return scopeOf(laneKey, read.session, read.chat);
    if (address !== null) {
      const started = await this.o.sessions.startChatSession(address, address.split(":", 1)[0]!);
      return scopeOf(laneKey, started.session, started.chat);
    }
    const lane = await this.o.sessions.resolveLane(laneKey);
    return lane ? scopeOf(laneKey, lane.session, lane.chat) : null;
  }
}
