import { err, ok } from "@nahida/contracts";
import type { BackgroundTaskRepository, SessionEvent, SessionEventRepository, SessionRepository } from "@nahida/db";
import { RunStoppedError } from "@nahida/lanes";
import { agentEventMetadata } from "@nahida/outbox";
import { unanswered } from "../agent-call";
import { finishEventEffect } from "../effects/finish-event.effect";
import type { Run } from "../run";
import { defineLaneKind, type KindItem } from "./lane-kind";

export interface AgentEventKindOptions {
  events: SessionEventRepository;
  sessions: SessionRepository;
  /** A sub-agent's session answers with the tools its task gave it. */
  tasks: BackgroundTaskRepository;
}

/**
 * An event another session (or an operator) put into this lane: stored as an event turn
 * (source `agent:<run>` or `api:<token>`, never a user turn), shown to the model in its own
 * envelope, answered to the run's output, and the answer recorded on the event so the
 * sender can read it.
 */
export function agentEventKind(o: AgentEventKindOptions) {
  /** The session the event is answered in: the chat's current one, or an older session of this lane that the sender named. */
  async function sessionOf(run: Run, item: KindItem<SessionEvent>): Promise<string | null> {
    const event = item.row;
    if (event.sessionId === run.sessionId) return event.sessionId;
    const named = await o.sessions.get(event.sessionId);
    if (named && named.laneKey === run.lane.laneKey) return named.id;
    run.reject(item.itemId, `agent event ${event.id} is for session ${event.sessionId}, which is not in lane ${run.lane.laneKey}`);
    return null;
  }

  async function answerEvent(run: Run, item: KindItem<SessionEvent>): Promise<void> {
    const event = item.row;
    const sessionId = await sessionOf(run, item);
    if (sessionId === null) return;
    const turn = { role: "event" as const, content: event.content, source: event.source, metadata: agentEventMetadata({ ...event, mode: "enqueue" }) };
    const child = run.scope.session.parentId !== null && sessionId === run.scope.session.id ? await o.tasks.ofChild(sessionId) : null;
    const answer = await run.callAgent(sessionId, [turn], { eventDepth: event.depth, allowedTools: child?.tools ?? null });
    const finish = (status: "done" | "failed", reply: string | null, error: string | null) => run.uow.emit(finishEventEffect, { eventId: event.id, status, reply, error });
    const error = unanswered(answer);
    if (error !== null) return finish("failed", null, error);
    if (run.lane.signal.reason instanceof RunStoppedError) return finish("failed", null, "the turn was stopped (/stop)");
    const text = answer.kind === "text" ? answer.text : null;
    // The sender reads the answer off the event; a session that is both the sender and the
    // run's output (a parent asking its child) is not told twice.
    const outputIsSender = run.scope.output.kind === "session" && run.scope.output.sessionId === event.fromSessionId;
    if (text !== null && !outputIsSender) run.answer({ text }, { source: "agent", sessionId });
    finish("done", text, null);
  }

  return defineLaneKind<SessionEvent>({
    kind: "agent_event",
    async load(refIds) {
      const events = new Map((await o.events.getMany(refIds)).map((e) => [e.id, e]));
      // An event's session deleted since takes the event with it.
      return new Map(refIds.map((id) => [id, events.has(id) ? ok(events.get(id)!) : err(`agent event ${id} does not exist (its session was deleted)`)]));
    },
    async handle(items, run) {
      for (const item of items) await answerEvent(run, item);
    },
  });
}
