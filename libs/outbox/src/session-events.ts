import { encodeLaneItem, err, ok, type AgentEventTurnMetadata, type LaneItemRef, type Result } from "@nahida/contracts";
import type { NewSessionEvent, SessionEventRepository, SessionRepository, TurnRepository, Tx } from "@nahida/db";
import type { OutboxError } from "./outbox";

export interface SessionEventsOptions {
  events: SessionEventRepository;
  sessions: SessionRepository;
  turns: TurnRepository;
  /** Appends a lane item in `tx` (`LaneStore.append`). */
  appendToLane: (laneKey: string, item: LaneItemRef, tx: Tx) => Promise<unknown>;
  /** Wakes a lane after the commit that appended to it. */
  wake: (laneKey: string) => Promise<void>;
  transaction: <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>;
}

/** The metadata of an agent event's turn in the target's history. */
export const agentEventMetadata = (event: NewSessionEvent): AgentEventTurnMetadata => ({
  kind: "agent_event",
  event_id: event.id,
  mode: event.mode,
  depth: event.depth,
  from_session_id: event.fromSessionId,
});

/**
 * Events into other sessions, the outbox's other kind of effect: written in the sender's
 * transaction (a run's fenced commit, an operator's request), acted on after it. A
 * `record_only` event is a turn (role `event`) in the target's history; an `enqueue` event
 * is also a lane item in the target's lane, whose run writes the turn in lane order and
 * records the answer on the event.
 */
export class SessionEvents {
  constructor(private readonly o: SessionEventsOptions) {}

  /** Writes `event` in `tx`; returns the lane to wake after the commit (null for record_only). */
  async write(event: NewSessionEvent, tx: Tx): Promise<Result<{ wake: string | null }, OutboxError>> {
    const session = await this.o.sessions.get(event.sessionId, tx);
    if (!session) return err({ code: "not_found", message: `session ${event.sessionId} does not exist` });
    await this.o.events.create([event], tx);
    if (event.mode === "record_only") {
      await this.o.turns.append(event.sessionId, [{ role: "event", content: event.content, source: event.source, metadata: agentEventMetadata(event) }], tx);
      return ok({ wake: null });
    }
    // Under the sender's lane lock when a run sends: two runs enqueueing into each other's
    // lanes at the same instant can deadlock; Postgres breaks it and that run is retried.
    await this.o.appendToLane(session.laneKey, encodeLaneItem({ kind: "agent_event", eventId: event.id }), tx);
    return ok({ wake: session.laneKey });
  }

  /** One event in its own transaction, woken after it commits (operators' events). */
  async send(event: NewSessionEvent): Promise<Result<void, OutboxError>> {
    const written = await this.o.transaction((tx) => this.write(event, tx));
    if (!written.ok) return written;
    if (written.value.wake) await this.wake([written.value.wake]);
    return ok(undefined);
  }

  /** Best effort: a lost wake is covered by the lane sweeper. */
  async wake(laneKeys: Iterable<string>): Promise<void> {
    await Promise.all([...new Set(laneKeys)].map((key) => this.o.wake(key).catch(() => undefined)));
  }
}
