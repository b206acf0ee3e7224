import { createHash, randomUUID } from "node:crypto";
import { err, ok, type Clock, type CronCreateRequest, type CronUpdateRequest, type TriggerMode } from "@nahida/contracts";
import type { CronJobs } from "@nahida/cron";
import type { CronRepository, FencedPart, NewSessionEvent, NewTurn, SessionEventRepository, SessionRepository, TurnRepository, Tx } from "@nahida/db";
import type { Outbox, OutboxRequest, SessionEvents } from "@nahida/outbox";
import type { ToolOutbox } from "../agent/tool-registry";

export interface RunWritesOptions {
  runId: string;
  outbox: Outbox;
  sessions: SessionRepository;
  turns: TurnRepository;
  cron: CronRepository;
  /** Checks cron jobs that tools and commands create or edit; their writes join the commit. */
  cronJobs: CronJobs;
  /** Events into other sessions (`sessions_send`). */
  sessionEvents: SessionEvents;
  events: SessionEventRepository;
  /**
   * Names this run's work across retries (its first lane item's id): an event sent at once
   * to be waited for gets an id derived from it, so a retry finds it instead of sending again.
   */
  stableKey: string;
  clock: Clock;
}

/**
 * A cron job write of a tool or command, checked when it was asked for and applied in the
 * commit. A create is prepared again at commit time, so its first slot counts from then.
 */
export type CronWrite =
  | { kind: "create"; jobId: string; request: CronCreateRequest; owner: string }
  | { kind: "update"; jobId: string; request: CronUpdateRequest }
  | { kind: "delete"; jobId: string };

/** How a scheduled turn ended, written to its cron run in the commit. */
export interface CronRunOutcome {
  status: "succeeded" | "failed";
  sessionId: string;
  deliveryIds?: string[];
  error?: string;
}

interface PendingEvent {
  sessionId: string;
  turn: NewTurn;
}

/** How the run answered an agent event that was put into its lane. */
export interface EventOutcome {
  status: "done" | "failed";
  reply: string | null;
  error: string | null;
}

/** A UUID-shaped id derived from `key` (the same key, the same id). */
function derivedId(key: string): string {
  const hex = createHash("sha256").update(key).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The unit of work of one run: everything the run will write, applied in order by
 * {@link commit} inside the lane's fenced transaction. Until then nothing is in Postgres.
 */
export class RunWrites {
  private readonly turnsBySession = new Map<string, NewTurn[]>();
  private readonly deliveries: OutboxRequest[] = [];
  private readonly events: PendingEvent[] = [];
  private readonly newSessions: { id: string; address: string; channel: string }[] = [];
  private readonly cleared = new Set<string>();
  private readonly triggerModes = new Map<string, TriggerMode>();
  private readonly sendOverrides = new Map<string, "allow" | "deny" | null>();
  private readonly cronRuns = new Map<string, CronRunOutcome>();
  private readonly cronWrites: CronWrite[] = [];
  private readonly sessionEvents: NewSessionEvent[] = [];
  private readonly eventOutcomes = new Map<string, EventOutcome>();
  /** What tools sent, by target: the final reply is not sent again when a tool already said it. */
  private readonly toolSends: { target: string; text: string }[] = [];
  /** Calls of `sendEventNow` so far, by their key: the n-th identical call is a different event. */
  private readonly immediateCalls = new Map<string, number>();

  constructor(private readonly o: RunWritesOptions) {}

  /** Queues a delivery (not checked here: a run's replies go to its own chat). Returns its id. */
  deliver(request: Omit<OutboxRequest, "runId">): string {
    const deliveryId = request.deliveryId ?? randomUUID();
    this.deliveries.push({ ...request, runId: this.o.runId, deliveryId });
    return deliveryId;
  }

  appendTurns(sessionId: string, turns: NewTurn[]): void {
    this.pending(sessionId).push(...turns.map((t) => ({ ...t, runId: this.o.runId })));
  }

  /** Turns this run will append to the session, in order. */
  pendingTurns(sessionId: string): readonly NewTurn[] {
    return this.turnsBySession.get(sessionId) ?? [];
  }

  /** Starts a fresh session for the chat (`/new`) and returns its id. */
  rotateSession(chat: { address: string; channel: string }): string {
    const id = randomUUID();
    this.newSessions.push({ id, ...chat });
    return id;
  }

  /** Forgets the session's history: stored turns and what this run added so far. */
  clearHistory(sessionId: string): void {
    this.cleared.add(sessionId);
    this.turnsBySession.get(sessionId)?.splice(0);
  }

  /** True when this run created the session (`/new`): it has no stored history. */
  isNewSession(sessionId: string): boolean {
    return this.newSessions.some((s) => s.id === sessionId);
  }

  /** True when this run wiped the session's stored history. */
  isCleared(sessionId: string): boolean {
    return this.cleared.has(sessionId);
  }

  recordEvent(sessionId: string, turn: Omit<NewTurn, "role" | "runId">): void {
    this.events.push({ sessionId, turn: { ...turn, role: "event", runId: this.o.runId } });
  }

  /** Records a scheduled turn's outcome on its cron run (the scheduler reads it from there). */
  finishCronRun(cronRunId: string, outcome: CronRunOutcome): void {
    this.cronRuns.set(cronRunId, outcome);
  }

  /** A cron job write (create, edit, delete), applied in the commit in call order. */
  writeCron(write: CronWrite): void {
    this.cronWrites.push(write);
  }

  /** Records how an agent event of the lane was answered (on its row, in the commit). */
  finishEvent(eventId: string, outcome: EventOutcome): void {
    this.eventOutcomes.set(eventId, outcome);
  }

  /** True when a tool of this run already sent `text` to `target`. */
  toolSent(target: string, text: string): boolean {
    return this.toolSends.some((s) => s.target === target && s.text.trim() === text.trim());
  }

  /** A chat's `/send` override, applied in the commit. */
  setSendOverride(chatAddress: string, value: "allow" | "deny" | null): void {
    this.sendOverrides.set(chatAddress, value);
  }

  setTriggerMode(chatAddress: string, mode: TriggerMode): void {
    this.triggerModes.set(chatAddress, mode);
  }

  /**
   * The narrow handle the tools of one agent call get. Their effects are held apart and join
   * this run's commit only through `keep()`, called when the agent call returned: a call that
   * was stopped or failed (its turns are not stored either) leaves nothing behind.
   */
  toolOutbox(sessionId: string): { outbox: ToolOutbox; keep(): void } {
    const source = `agent:${this.o.runId}`;
    const held: (() => void)[] = [];
    return {
      outbox: {
        send: async ({ target, message, recordIn }) => {
          const request = { target, message, source, deliveryId: randomUUID() };
          const checked = await this.o.outbox.check(request);
          if (!checked.ok) return checked;
          held.push(() => {
            this.deliver(request);
            this.toolSends.push({ target, text: message.text });
            if (recordIn) {
              this.recordEvent(recordIn, {
                content: message.text,
                source,
                metadata: { kind: "cross_session_message", delivery_id: request.deliveryId, target, from_session_id: sessionId },
              });
            }
          });
          return ok({ deliveryId: request.deliveryId });
        },
        sendEvent: async (event) => {
          const id = randomUUID();
          held.push(() => this.sessionEvents.push({ ...event, id, source, fromSessionId: sessionId }));
          return ok({ eventId: id });
        },
        sendEventNow: async (event) => {
          // Not the text: a retried run's model may word it differently; its n-th waited-for
          // send to the same session is the same event.
          const key = `${this.o.stableKey}|${sessionId}|${event.sessionId}|${event.mode}`;
          const n = (this.immediateCalls.get(key) ?? 0) + 1;
          this.immediateCalls.set(key, n);
          const id = derivedId(`${key}|${n}`);
          const sent = await this.o.sessionEvents.send({ ...event, id, source, fromSessionId: sessionId });
          return sent.ok ? ok({ eventId: id }) : sent;
        },
        createCron: async (request) => {
          const owner = `session:${sessionId}`;
          const prepared = this.o.cronJobs.prepare(request, owner);
          if (!prepared.ok) return prepared;
          if (prepared.value.enabled) {
            const room = await this.o.cronJobs.checkRoom(prepared.value.target);
            if (!room.ok) return room;
          }
          const jobId = prepared.value.id!;
          held.push(() => this.writeCron({ kind: "create", jobId, request, owner }));
          return ok({ jobId, nextRunAt: prepared.value.nextRunAt });
        },
        updateCron: async (jobId, request) => {
          const checked = await this.o.cronJobs.checkUpdate(jobId, request);
          if (!checked.ok) return checked;
          held.push(() => this.writeCron({ kind: "update", jobId, request }));
          return ok(undefined);
        },
        deleteCron: async (jobId) => {
          const checked = await this.o.cronJobs.checkDelete(jobId);
          if (!checked.ok) return checked;
          held.push(() => this.writeCron({ kind: "delete", jobId }));
          return ok(undefined);
        },
      },
      keep: () => {
        for (const apply of held.splice(0)) apply();
      },
    };
  }

  /**
   * The commit as parts of one statement ({@link LaneRunContext.commitParts}), for the run
   * that wrote only turns and plain replies: a message and its answer, the common run.
   * Null when it wrote anything else; {@link commit} writes that in a transaction.
   */
  parts(): { parts: FencedPart[]; deliveryIds: string[] } | null {
    const onlyTurnsAndReplies =
      this.newSessions.length === 0 &&
      this.cleared.size === 0 &&
      this.triggerModes.size === 0 &&
      this.sendOverrides.size === 0 &&
      this.events.length === 0 &&
      this.cronWrites.length === 0 &&
      this.cronRuns.size === 0 &&
      this.sessionEvents.length === 0 &&
      this.eventOutcomes.size === 0;
    if (!onlyTurnsAndReplies) return null;
    const deliveries = this.deliveries.length > 0 ? this.o.outbox.writePart(this.deliveries) : undefined;
    if (deliveries === null) return null;
    const now = this.o.clock.now();
    const parts = [...this.turnsBySession].flatMap(([sessionId, turns]) => this.o.turns.appendParts(sessionId, turns, now));
    if (deliveries) parts.push(deliveries);
    return { parts, deliveryIds: this.deliveries.map((d) => d.deliveryId!) };
  }

  /** Writes everything in `tx` (the run's fenced transaction); returns the deliveries to dispatch and the lanes to wake after it commits. */
  async commit(tx: Tx): Promise<{ deliveryIds: string[]; wake: string[] }> {
    for (const s of this.newSessions) await this.o.sessions.rotate(s.address, s.channel, tx, s.id);
    for (const sessionId of this.cleared) await this.o.turns.clear(sessionId, tx);
    for (const [address, mode] of this.triggerModes) await this.o.sessions.setTriggerMode(address, mode, tx);
    for (const [address, value] of this.sendOverrides) await this.o.events.setChatSendPolicy(address, value, tx);
    const now = this.o.clock.now();
    for (const [sessionId, turns] of this.turnsBySession) {
      if (turns.length > 0) await this.o.turns.append(sessionId, turns, tx, { touchSession: now });
      else await this.o.sessions.touch(sessionId, now, tx);
    }
    for (const event of this.events) {
      // Not under the target's lane lock: this commit holds its own lane, and two runs writing
      // into each other's sessions would deadlock. An event that lands between another run's
      // tool call and its result is moved after the result when the context is built.
      if (!(await this.o.sessions.get(event.sessionId, tx))) throw new Error(`session ${event.sessionId} vanished before the run committed`);
      await this.o.turns.append(event.sessionId, [event.turn], tx);
    }
    const ids: string[] = [];
    for (const request of this.deliveries) {
      const written = await this.o.outbox.write(request, tx);
      if (!written.ok) throw new Error(`delivery to ${request.target} refused at commit: ${written.error.message}`);
      if (written.value.created) ids.push(written.value.delivery.id);
    }
    for (const write of this.cronWrites) await this.applyCron(write, tx);
    for (const [cronRunId, outcome] of this.cronRuns) {
      await this.o.cron.recordTurnOutcome(cronRunId, { outcome: outcome.status, sessionId: outcome.sessionId, deliveryIds: outcome.deliveryIds ?? [], error: outcome.error ?? null }, tx);
    }
    const wake: string[] = [];
    // A deadlock with a commit enqueueing the other way is handed back uncounted by the lane
    // runtime (`isConflictAbort`); ordering here could not prevent it, as the own lane is locked first.
    for (const event of this.sessionEvents) {
      const written = await this.o.sessionEvents.write(event, tx);
      // Checked when the tool called; a session deleted since takes its event with it.
      if (written.ok && written.value.wake) wake.push(written.value.wake);
    }
    for (const [eventId, outcome] of this.eventOutcomes) {
      await this.o.events.finish(eventId, { ...outcome, runId: this.o.runId, at: now }, tx);
    }
    return { deliveryIds: ids, wake };
  }

  /**
   * One cron write of the commit. It was checked when asked for; one that no longer holds
   * (a job deleted or the quota filled since, an `at` that passed) is dropped, not thrown:
   * the rest of the run's work must not be lost for it.
   */
  private async applyCron(write: CronWrite, tx: Tx): Promise<void> {
    switch (write.kind) {
      case "create": {
        const prepared = this.o.cronJobs.prepare(write.request, write.owner, write.jobId);
        if (prepared.ok) await this.o.cron.create(prepared.value, tx);
        return;
      }
      case "update":
        await this.o.cronJobs.update(write.jobId, write.request, tx);
        return;
      case "delete":
        await this.o.cronJobs.delete(write.jobId, tx);
        return;
      default: {
        const unreachable: never = write;
        throw new Error(`unknown cron write ${JSON.stringify(unreachable)}`);
      }
    }
  }

  private pending(sessionId: string): NewTurn[] {
    let turns = this.turnsBySession.get(sessionId);
    if (!turns) {
      turns = [];
      this.turnsBySession.set(sessionId, turns);
    }
    return turns;
  }
}
