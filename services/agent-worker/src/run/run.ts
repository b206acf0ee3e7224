import { randomUUID } from "node:crypto";
import type { LaneMode, OutboundMessage, TriggerMode } from "@nahida/contracts";
import { newRowId, type Compaction, type CompactionRepository, type NewTurn, type Turn, type TurnRepository } from "@nahida/db";
import type { LaneRunContext } from "@nahida/lanes";
import type { Logger } from "@nahida/observability";
import type { OutboxRequest } from "@nahida/outbox";
import type { AgentAnswer, AgentCallOptions, AgentCaller } from "./agent-call";
import { appendTurnsEffect } from "./effects/append-turns.effect";
import { chatSettingEffect, type ChatSetting } from "./effects/chat-setting.effect";
import { clearHistoryEffect } from "./effects/clear-history.effect";
import { compactionEffect } from "./effects/compaction.effect";
import { deliverEffect } from "./effects/deliver.effect";
import { rotateSessionEffect } from "./effects/rotate-session.effect";
import { sendEventEffect } from "./effects/send-event.effect";
import type { RunScope } from "./run-scope";
import { UnitOfWork } from "./unit-of-work";

type SettingValue = { [C in ChatSetting as C["setting"]]: C["value"] };
type ChatSettingChange = ChatSetting extends infer C ? (C extends ChatSetting ? Omit<C, "address"> : never) : never;

/**
 * What a session's context is built from: its newest compaction checkpoint (null: none)
 * and the stored turns after its cut.
 */
export interface SessionHistory {
  compaction: (Pick<Compaction, "id" | "summary" | "throughSeq" | "fromSeq" | "coveredTurns"> & { facts: unknown }) | null;
  turns: Turn[];
}

export interface RunOptions {
  turns: TurnRepository;
  compactions: CompactionRepository;
  /** Turns after the checkpoint's cut an agent call reads at most (a safety cap; compaction keeps it far lower). */
  historyTurns: number;
  agent: AgentCaller;
  logger: Logger;
  /** The history the scope read brought (a chat lane's current session), used by the first agent call of that session. */
  history: ({ sessionId: string } & SessionHistory) | null;
}

/** How the answer to something goes out: who says it, for which session, quoting what. */
export interface AnswerRoute {
  source: string;
  sessionId: string;
  inboundMessageId?: string;
  /** A message id to quote; explicit so that "no quote" stays possible. */
  replyTo?: string;
}

/**
 * One run as its kinds see it: the lane run, its scope, and its unit of work. What the run
 * has done so far (the session `/new` started, a chat setting changed, the turns it will
 * append) is read back from the unit of work, never kept beside it.
 */
export class Run {
  readonly uow = new UnitOfWork();
  /** Calls of `sendEventNow` and `spawnTask` so far, by their key: the n-th identical call is a different event or task. */
  readonly immediateCalls = new Map<string, number>();
  /** Tokens this run's agent calls used. */
  readonly usage = { input: 0, output: 0 };
  private cachedHistory: RunOptions["history"];

  constructor(
    readonly lane: LaneRunContext,
    readonly scope: RunScope,
    private readonly o: RunOptions,
  ) {
    this.cachedHistory = o.history;
  }

  get id(): string {
    return this.lane.runId;
  }

  get logger(): Logger {
    return this.o.logger;
  }

  /** The chat's current session as this run left it: the scope's, or the one `/new` started. */
  get sessionId(): string {
    return this.uow.values(rotateSessionEffect).at(-1)?.sessionId ?? this.scope.session.id;
  }

  get triggerMode(): TriggerMode | string {
    return this.setting("trigger_mode") ?? this.scope.chat?.triggerMode ?? "mention";
  }

  get sendOverride(): "allow" | "deny" | null {
    const set = this.setting("send_override");
    return set !== undefined ? set : ((this.scope.chat?.sendPolicy ?? null) as "allow" | "deny" | null);
  }

  get queueMode(): LaneMode {
    return this.setting("queue_mode") ?? this.lane.mode;
  }

  /** Changes a setting of the run's chat, in the commit; later reads in this run see it. */
  changeSetting(change: ChatSettingChange): void {
    this.uow.emit(chatSettingEffect, { ...change, address: this.requireChat().address } as ChatSetting);
  }

  /** Turns this run will append to the session, in order. */
  pendingTurns(sessionId: string): NewTurn[] {
    return this.uow.values(appendTurnsEffect).flatMap((a) => (a.sessionId === sessionId ? a.turns : []));
  }

  appendTurns(sessionId: string, turns: NewTurn[]): void {
    this.uow.emit(appendTurnsEffect, { sessionId, turns: turns.map((t) => ({ ...t, runId: this.id })) });
  }

  /** Starts a fresh session for the chat (`/new`) and returns its id. */
  rotateSession(): string {
    const chat = this.requireChat();
    const sessionId = randomUUID(); // random, as sessions' ids are (SessionRepository.startChatSession)
    this.uow.emit(rotateSessionEffect, { sessionId, address: chat.address, channel: chat.channel });
    return sessionId;
  }

  /** Forgets the session's history: stored turns and what this run added so far. */
  clearHistory(sessionId: string): void {
    const hadTurns = this.uow.values(appendTurnsEffect).some((a) => a.sessionId === sessionId);
    this.uow.discard(appendTurnsEffect, (a) => a.sessionId === sessionId);
    this.uow.discard(compactionEffect, (c) => c.sessionId === sessionId);
    this.uow.emit(clearHistoryEffect, { sessionId });
    // The turns go, the activity they were stays: the session's last activity still moves.
    if (hadTurns) this.uow.emit(appendTurnsEffect, { sessionId, turns: [] });
  }

  /** Whether the database may hold history of this session that this run has not wiped or just created. */
  hasStoredHistory(sessionId: string): boolean {
    return !this.uow.values(clearHistoryEffect).some((c) => c.sessionId === sessionId) && !this.uow.values(rotateSessionEffect).some((r) => r.sessionId === sessionId);
  }

  /**
   * The session's stored history for an agent call: the scope read's once, then read again
   * (events may have landed). A compaction this run made already counts: its checkpoint,
   * and only the turns after its cut.
   */
  async history(sessionId: string): Promise<SessionHistory> {
    if (!this.hasStoredHistory(sessionId)) return { compaction: null, turns: [] };
    let history: SessionHistory;
    if (this.cachedHistory?.sessionId === sessionId) {
      history = this.cachedHistory;
      this.cachedHistory = null;
    } else {
      const compaction = await this.o.compactions.latest(sessionId);
      history = { compaction, turns: await this.o.turns.after(sessionId, compaction?.throughSeq ?? null, this.o.historyTurns) };
    }
    const made = this.compactionOf(sessionId);
    return made ? { compaction: made, turns: history.turns.filter((t) => t.seq > made.throughSeq) } : history;
  }

  /** The compaction checkpoint this run made of the session, if it made one (at most one a run). */
  compactionOf(sessionId: string): SessionHistory["compaction"] {
    return this.uow.values(compactionEffect).find((c) => c.sessionId === sessionId) ?? null;
  }

  async turnCount(sessionId: string): Promise<number> {
    return (this.hasStoredHistory(sessionId) ? await this.o.turns.count(sessionId) : 0) + this.pendingTurns(sessionId).length;
  }

  /** Queues a delivery (checked by the caller, or the run's own chat); returns its id. */
  deliver(request: Omit<OutboxRequest, "runId" | "deliveryId">): string {
    const deliveryId = newRowId();
    this.uow.emit(deliverEffect, { ...request, runId: this.id, deliveryId });
    return deliveryId;
  }

  /** True when a tool of this run already sent `text` to `target`. */
  toolSent(target: string, text: string): boolean {
    const source = `agent:${this.id}`;
    return this.uow.values(deliverEffect).some((d) => d.source === source && d.target === target && d.message.text.trim() === text.trim());
  }

  /**
   * Sends an answer to the run's output: a delivery to the chat (its id), an event turn in
   * the output session, or nothing. Text a tool of this run already sent to the chat is not
   * sent twice.
   */
  answer(message: Pick<OutboundMessage, "text"> & Partial<OutboundMessage>, route: AnswerRoute): string | null {
    const output = this.scope.output;
    switch (output.kind) {
      case "chat":
        if (route.source === "agent" && this.toolSent(output.address, message.text)) return null;
        return this.deliver({
          target: output.address,
          message: {
            text: message.text,
            attachments: message.attachments ?? [],
            extra: message.extra ?? {},
            ...(route.replyTo !== undefined ? { replyTo: route.replyTo } : {}),
          },
          source: route.source,
          sessionId: route.sessionId,
          ...(route.inboundMessageId ? { inboundMessageId: route.inboundMessageId } : {}),
        });
      case "session":
        this.uow.emit(sendEventEffect, {
          id: newRowId(),
          sessionId: output.sessionId,
          source: `agent:${this.id}`,
          fromSessionId: route.sessionId,
          content: message.text,
          mode: "record_only",
          depth: 0,
        });
        return null;
      case "none":
        return null;
      default: {
        const unreachable: never = output;
        throw new Error(`unknown run output ${JSON.stringify(unreachable)}`);
      }
    }
  }

  /** Appends `prompt` to the session and runs the agent over it (`agent-call.ts`). */
  callAgent(sessionId: string, prompt: NewTurn[], options: AgentCallOptions = {}): Promise<AgentAnswer> {
    return this.o.agent(this, sessionId, prompt, options);
  }

  /** The session's recent conversation as this run sees it: its stored turns (unless wiped or new) and the ones this run adds. */
  async conversation(sessionId: string, limit: number): Promise<{ role: string; content: string; metadata?: unknown }[]> {
    const stored = this.hasStoredHistory(sessionId) ? await this.o.turns.recent(sessionId, limit) : [];
    return [...stored, ...this.pendingTurns(sessionId)].slice(-limit);
  }

  reject(itemId: string, reason: string): void {
    this.lane.reject(itemId, reason);
  }

  /** The last value this run gave a chat setting; undefined when it did not change it. */
  private setting<S extends keyof SettingValue>(name: S): SettingValue[S] | undefined {
    const set = this.uow.values(chatSettingEffect).findLast((c) => c.setting === name);
    return set?.value as SettingValue[S] | undefined;
  }

  private requireChat() {
    if (!this.scope.chat) throw new Error(`session ${this.scope.session.id} has no chat`);
    return this.scope.chat;
  }
}
