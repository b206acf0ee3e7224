import type { Redis } from "ioredis";
import { decodeLaneItem, parseChatAddress, type Clock, type CronPayload, type OutboundMessage } from "@nahida/contracts";
import {
  chatOfLane,
  type CronJob,
  type CronRepository,
  type CronRun,
  type InboundMessageRepository,
  type InboundRecord,
  type NewTurn,
  type RunRepository,
  type SessionEvent,
  type SessionEventRepository,
  type SessionRepository,
  type Turn,
  type TurnRepository,
} from "@nahida/db";
import { RunStoppedError, type LaneHandler, type LaneRunContext } from "@nahida/lanes";
import type { Logger } from "@nahida/observability";
import { readCronJob, type CronJobs } from "@nahida/cron";
import { agentEventMetadata, type Outbox, type SessionEvents } from "@nahida/outbox";
import type { TypedQueue } from "@nahida/queue";
import type { RunAgent } from "../agent/agent-loop";
import { applyReplySignals } from "../agent/reply-signals";
import type { CommandContext } from "../commands/command-context";
import { parseCommand, type CommandRouter } from "../commands/command-router";
import type { ContextBuilder, ScheduledTurnMetadata, UserTurnMetadata } from "../context/context-builder";
import { RunWrites } from "./run-writes";

export const NO_LLM_HINT =
  "I can run commands (/help), but no language model is configured yet. Set OPENAI_BASE_URL (and OPENAI_API_KEY) to let me answer.";
export const LLM_FAILED_REPLY = "Sorry, I could not reach the language model. Please try again later.";

export interface SessionRunHandlerOptions {
  redis: Redis;
  prefix: string;
  inbound: InboundMessageRepository;
  /** The one-statement read of a chat lane's run. */
  runs: RunRepository;
  sessions: SessionRepository;
  turns: TurnRepository;
  /** Reads the cron runs of `scheduled_turn` items, and records their outcome in the run's commit. */
  cron: CronRepository;
  /** Checks the cron jobs tools and `/cron` write. */
  cronJobs: CronJobs;
  outbox: Outbox;
  /** Agent events: read for `agent_event` items, answered in the run's commit. */
  events: SessionEventRepository;
  /** Events tools send into other sessions. */
  sessionEvents: SessionEvents;
  /** For the best-effort "typing…" indicator, which has no row. */
  outbound: TypedQueue<"outbound">;
  commands: CommandRouter<CommandContext>;
  contextBuilder: ContextBuilder;
  /** Null when no LLM is configured: commands still work, free text gets a hint. */
  runAgent: RunAgent | null;
  model: string | null;
  historyTurns: number;
  /** The lane's attempt limit; on the last attempt an LLM failure is answered with an apology. */
  maxAttempts: number;
  clock: Clock;
  logger: Logger;
}

const TYPING_RENEW_MS = 4_000;
/** A model that answers faster than this shows no "typing…" at all. */
const TYPING_AFTER_MS = 500;

/** Key marking that a lane's run was stopped, read by the `/stop` that caused it. */
export const stoppedKey = (prefix: string, laneKey: string) => `${prefix}:lanes:stopped:${laneKey}`;

/** A cron job's agent turn waiting in the lane: its run row and the job it belongs to. */
interface ScheduledWork {
  itemId: string;
  run: CronRun;
  job: CronJob;
  payload: Extract<CronPayload, { kind: "agent_turn" }>;
}

/** What a lane item turned into, in lane order. */
type Work = { kind: "inbound"; record: InboundRecord } | { kind: "scheduled"; work: ScheduledWork } | { kind: "event"; event: SessionEvent };

type Segment =
  | { kind: "command"; record: InboundRecord; name: string; args: string }
  | { kind: "messages"; records: InboundRecord[] }
  | { kind: "scheduled"; work: ScheduledWork }
  | { kind: "event"; event: SessionEvent };

/** Splits a batch into commands (one each), scheduled turns (one each) and runs of ordinary messages, keeping order. */
function segment(items: Work[], prefix: string): Segment[] {
  const segments: Segment[] = [];
  for (const item of items) {
    if (item.kind === "scheduled" || item.kind === "event") {
      segments.push(item);
      continue;
    }
    const record = item.record;
    const fromIngress = record.message.command;
    if (fromIngress?.addressedToOther) continue;
    const command = fromIngress ?? parseCommand(record.message.text.trim(), prefix);
    if (command) {
      segments.push({ kind: "command", record, name: command.name, args: command.args });
      continue;
    }
    const last = segments.at(-1);
    if (last?.kind === "messages") last.records.push(record);
    else segments.push({ kind: "messages", records: [record] });
  }
  return segments;
}

/**
 * The lane handler of the agent worker. The lane names the session (through
 * `sessions.lane_key`; a chat lane's session is the chat's current one), each lane item is
 * handled by its kind, and everything the run does — turns, replies, tools' sends and
 * events, `/new`, `/reset` — goes into one {@link RunWrites} committed in the lane's fenced
 * transaction; deliveries are enqueued after it. A retried run recomputes everything; only
 * the run that commits leaves anything behind.
 */
export function createSessionRunHandler(o: SessionRunHandlerOptions): LaneHandler {
  const { sessions, turns } = o;

  /** The batch's items by kind; items that cannot be decoded are rejected with their reason. */
  function decode(run: LaneRunContext) {
    const inboundItems: { itemId: string; inboundMessageId: string }[] = [];
    const scheduledItems: { itemId: string; cronRunId: string }[] = [];
    const eventItems: { itemId: string; eventId: string }[] = [];
    for (const row of run.items) {
      const item = decodeLaneItem(row);
      if (!item.ok) {
        run.reject(row.id, item.error);
        continue;
      }
      switch (item.value.kind) {
        case "inbound":
          inboundItems.push({ itemId: row.id, inboundMessageId: item.value.inboundMessageId });
          break;
        case "scheduled_turn":
          scheduledItems.push({ itemId: row.id, cronRunId: item.value.cronRunId });
          break;
        case "agent_event":
          eventItems.push({ itemId: row.id, eventId: item.value.eventId });
          break;
        case "subagent_result":
          // Its producer comes with the sub-agent work; until then such an item fails where
          // it can be seen instead of vanishing.
          run.reject(row.id, `this worker does not handle ${item.value.kind} lane items yet`);
          break;
        default: {
          const unreachable: never = item.value;
          run.reject(row.id, `unhandled lane item ${JSON.stringify(unreachable)}`);
        }
      }
    }
    return { inboundItems, scheduledItems, eventItems };
  }

  /**
   * Reads the batch's rows, in lane order; items that cannot be handled are rejected with
   * their reason. `records` are the inbound rows when the caller read them already.
   */
  async function itemsOf(run: LaneRunContext, { inboundItems, scheduledItems, eventItems }: ReturnType<typeof decode>, records?: InboundRecord[]): Promise<Work[]> {
    const [inbound, cronRuns, events] = await Promise.all([
      records ?? (inboundItems.length ? o.inbound.getMany(inboundItems.map((i) => i.inboundMessageId)) : []),
      Promise.all(scheduledItems.map((i) => o.cron.getRun(i.cronRunId))),
      o.events.getMany(eventItems.map((i) => i.eventId)),
    ]);
    const work = new Map<string, Work>();
    const eventById = new Map(events.map((e) => [e.id, e]));
    for (const i of eventItems) {
      const event = eventById.get(i.eventId);
      // An event's session deleted since takes the event with it.
      if (event) work.set(i.itemId, { kind: "event", event });
      else run.reject(i.itemId, `agent event ${i.eventId} does not exist (its session was deleted)`);
    }
    const byId = new Map(inbound.map((r) => [r.id, r]));
    for (const i of inboundItems) {
      const record = byId.get(i.inboundMessageId);
      if (record) work.set(i.itemId, { kind: "inbound", record });
      else run.reject(i.itemId, `inbound message ${i.inboundMessageId} does not exist`);
    }
    scheduledItems.forEach((i, index) => {
      const found = cronRuns[index];
      // A job deleted after it fired takes its runs with it: nothing is left to answer.
      if (!found) return run.reject(i.itemId, `cron run ${i.cronRunId} does not exist (its job was deleted)`);
      const { job, ...cronRun } = found;
      const read = readCronJob(job);
      if (!read.ok) return run.reject(i.itemId, read.error);
      const payload = read.value.payload;
      if (payload.kind !== "agent_turn") return run.reject(i.itemId, `cron job ${job.id} is a ${payload.kind} job, not an agent turn`);
      work.set(i.itemId, { kind: "scheduled", work: { itemId: i.itemId, run: cronRun, job, payload } });
    });
    return run.items.flatMap((row) => work.get(row.id) ?? []);
  }

  return async function handleRun(run: LaneRunContext): Promise<void> {
    const decoded = decode(run);
    const laneChat = chatOfLane(run.laneKey);
    // A chat's lane reads its chat, current session, messages and history in one statement.
    const read = laneChat === null ? null : await o.runs.readChatRun(laneChat, decoded.inboundItems.map((i) => i.inboundMessageId), o.historyTurns);
    const fetched = await itemsOf(run, decoded, read?.inbound);
    if (fetched.length === 0) return;
    const lane =
      read === null
        ? await sessions.resolveLane(run.laneKey)
        : read.chat && read.session
          ? { chat: read.chat, session: read.session }
          : await sessions.startChatSession(laneChat!, laneChat!.split(":", 1)[0]!);
    // The history read with the chat (a first session has none), used by the first agent
    // call of that session; later calls read again, as events may have landed since.
    let readHistory: { sessionId: string; turns: Turn[] } | null = read && lane ? { sessionId: lane.session.id, turns: read.session ? read.history : [] } : null;
    if (!lane) {
      for (const item of run.items) run.reject(item.id, `lane ${run.laneKey} has no session`);
      return;
    }
    const { chat, session } = lane;
    const chatAddress = chat.address;
    const address = parseChatAddress(chatAddress);
    if (!address.ok) throw new Error(`chat ${chatAddress} has a bad address: ${address.error.message}`);
    const chatType = address.value.type;
    const isGroup = chatType !== "private";
    const itemOf = new Map(run.items.map((i) => [i.refId, i.id]));
    const work = fetched.filter((item) => {
      if (item.kind !== "inbound" || item.record.chatAddress === chatAddress) return true;
      run.reject(itemOf.get(item.record.id)!, `inbound message of chat ${item.record.chatAddress} is in the lane of ${chatAddress}`);
      return false;
    });

    const writes = new RunWrites({
      runId: run.runId,
      outbox: o.outbox,
      sessions,
      turns,
      cron: o.cron,
      cronJobs: o.cronJobs,
      sessionEvents: o.sessionEvents,
      events: o.events,
      stableKey: run.items[0]?.id ?? run.runId,
      clock: o.clock,
    });
    const state = { sessionId: session.id, triggerMode: chat.triggerMode, sendOverride: (chat.sendPolicy ?? null) as "allow" | "deny" | null };

    /** Queues a reply to the chat; `replyTo` is explicit so that "no quote" stays possible. */
    const reply = (record: InboundRecord, message: Partial<OutboundMessage>, source: string, replyTo: string | undefined) =>
      writes.deliver({
        target: chatAddress,
        message: {
          text: message.text ?? "",
          attachments: message.attachments ?? [],
          extra: message.extra ?? {},
          ...(replyTo !== undefined ? { replyTo } : {}),
        },
        source,
        sessionId: state.sessionId,
        inboundMessageId: record.id,
      });

    /**
     * Whether the database may hold history for this session that this run has not wiped (a
     * session `/new` made in this run has none; an agent event may go to an older session of
     * the chat).
     */
    const hasStoredHistory = (sessionId: string) => !writes.isCleared(sessionId) && !writes.isNewSession(sessionId);
    const history = async (sessionId: string): Promise<Turn[]> => {
      if (!hasStoredHistory(sessionId)) return [];
      if (readHistory?.sessionId === sessionId) {
        const cached = readHistory.turns;
        readHistory = null;
        return cached;
      }
      return turns.recent(sessionId, o.historyTurns);
    };

    for (const part of segment(work, o.commands.prefix)) {
      if (part.kind === "scheduled") {
        await answerScheduled(part.work);
        continue;
      }
      if (part.kind === "event") {
        await answerEvent(part.event);
        continue;
      }
      if (part.kind === "command") {
        const context: CommandContext = {
          chatAddress,
          chatType,
          channel: chat.channel,
          sessionId: state.sessionId,
          triggerMode: state.triggerMode,
          senderRoles: part.record.message.sender.roles,
          model: o.model,
          turnCount: async () =>
            (hasStoredHistory(state.sessionId) ? await turns.count(state.sessionId) : 0) + writes.pendingTurns(state.sessionId).length,
          rotateSession: () => {
            state.sessionId = writes.rotateSession({ address: chatAddress, channel: chat.channel });
            return state.sessionId;
          },
          clearHistory: () => writes.clearHistory(state.sessionId),
          setTriggerMode: (mode) => {
            state.triggerMode = mode;
            writes.setTriggerMode(chatAddress, mode);
          },
          sendOverride: state.sendOverride,
          setSendOverride: (value) => {
            state.sendOverride = value;
            writes.setSendOverride(chatAddress, value);
          },
          consumeStopped: async () => (await o.redis.getdel(stoppedKey(o.prefix, run.laneKey))) !== null,
          commandList: () => o.commands.list(),
          cron: {
            list: async () => (await o.cron.list({ target: chatAddress, limit: 50, offset: 0 })).jobs,
            find: async (idOrPrefix) => {
              if (idOrPrefix.length < 4) return null;
              const { jobs } = await o.cron.list({ target: chatAddress, limit: 1_000, offset: 0 });
              const matches = jobs.filter((j) => j.id.startsWith(idOrPrefix.toLowerCase()));
              return matches.length === 1 ? matches[0]! : null;
            },
            remove: async (jobId) => {
              const checked = await o.cronJobs.checkDelete(jobId);
              if (!checked.ok) return checked.error.message;
              writes.writeCron({ kind: "delete", jobId });
              return null;
            },
            setEnabled: async (jobId, enabled) => {
              const checked = await o.cronJobs.checkUpdate(jobId, { enabled });
              if (!checked.ok) return checked.error.message;
              writes.writeCron({ kind: "update", jobId, request: { enabled } });
              return null;
            },
          },
        };
        const outcome = await o.commands.run(part.record.message.text, context, run.signal, { name: part.name, args: part.args });
        if (outcome.kind === "not_a_command") {
          // An unknown /word is ordinary text for the agent.
          await answerMessages([part.record]);
        } else if (outcome.reply) {
          // Command answers quote the command, as the command contract says.
          reply(part.record, outcome.reply, "command", outcome.reply.replyTo ?? part.record.message.messageId);
        }
        continue;
      }
      await answerMessages(part.records);
    }

    /**
     * "typing…" in the chat while the model works, once it has worked for TYPING_AFTER_MS:
     * a fast answer needs none, and a job per message would double the queue traffic.
     * Platforms show it for about 5 s, so it is renewed every 4 s. Best effort; a failure to
     * enqueue it is ignored.
     */
    function showTyping(): () => void {
      const send = () => void o.outbound.add("chat.action", { target: chatAddress, action: "typing" }).catch(() => undefined);
      let renew: ReturnType<typeof setInterval> | undefined;
      const first = setTimeout(() => {
        send();
        renew = setInterval(send, TYPING_RENEW_MS);
      }, TYPING_AFTER_MS);
      return () => {
        clearTimeout(first);
        clearInterval(renew);
      };
    }

    /**
     * One agent call over the session's history and the new turns (already appended);
     * stores what the model did and returns its final text after the reply signals, or null
     * when there is nothing to send (stopped, suppressed). `fallback` answers the last
     * attempt's LLM failure.
     */
    async function callAgent(sessionId: string, earlier: NewTurn[], fresh: NewTurn[], fallback: () => void, eventDepth = 0): Promise<string | null> {
      const messages = await o.contextBuilder.build(
        await history(sessionId),
        [...earlier, ...fresh].map((t) => ({ role: t.role, content: t.content, metadata: t.metadata ?? {}, ...(t.source ? { source: t.source } : {}) })),
      );
      if (run.signal.reason instanceof RunStoppedError) return null;
      let result;
      const tools = writes.toolOutbox(sessionId);
      const stopTyping = showTyping();
      try {
        result = await o.runAgent!(messages, {
          sessionId,
          chatAddress,
          runId: run.runId,
          laneKey: run.laneKey,
          eventDepth,
          subagent: (sessionId === session.id ? session.parentId : null) !== null,
          signal: run.signal,
          user: sessionId,
          outbox: tools.outbox,
        });
      } catch (error) {
        if (run.signal.reason instanceof RunStoppedError) {
          // `/stop`: keep what was said, send nothing, and tell the /stop that follows.
          await o.redis.set(stoppedKey(o.prefix, run.laneKey), run.runId, "PX", 10 * 60_000);
          return null;
        }
        if (run.signal.aborted) throw error;
        if (run.items.some((i) => i.attempts >= o.maxAttempts)) {
          o.logger.error({ err: (error as Error).message, laneKey: run.laneKey }, "LLM failed on the last attempt");
          fallback();
          return null;
        }
        throw error;
      } finally {
        stopTyping();
      }
      tools.keep();
      writes.appendTurns(
        sessionId,
        result.turns.map((turn) =>
          turn.role === "assistant"
            ? { role: "assistant", content: turn.content, metadata: { tool_calls: turn.toolCalls }, source: "agent" }
            : { role: "tool", content: turn.content, metadata: { tool_call_id: turn.toolCallId, name: turn.name }, source: "agent" },
        ),
      );
      const finalText = result.finalText ?? `I stopped after ${result.iterations} steps without finishing. Please ask again or narrow the request.`;
      const decision = applyReplySignals(finalText);
      if (decision.action === "suppress") {
        o.logger.debug({ laneKey: run.laneKey, reason: decision.reason }, "reply suppressed");
        return null;
      }
      writes.appendTurns(sessionId, [{ role: "assistant", content: decision.text, source: "agent" }]);
      return decision.text;
    }

    async function answerMessages(batch: InboundRecord[]): Promise<void> {
      const sessionId = state.sessionId;
      const userTurns: NewTurn[] = batch.map((record) => ({
        role: "user",
        content: record.message.text,
        metadata: {
          message_context: record.context,
          message_id: record.message.messageId,
          ...(record.message.attachments.length ? { attachments: record.message.attachments } : {}),
        } satisfies UserTurnMetadata,
        source: "user",
        inboundMessageId: record.id,
      }));
      const earlier = [...writes.pendingTurns(sessionId)];
      writes.appendTurns(sessionId, userTurns);
      const last = batch.at(-1)!;
      const replyTo = isGroup ? last.message.messageId : undefined;

      if (!o.runAgent) {
        reply(last, { text: NO_LLM_HINT }, "agent", replyTo);
        return;
      }
      const text = await callAgent(sessionId, earlier, userTurns, () => reply(last, { text: LLM_FAILED_REPLY }, "agent", replyTo));
      // Said already with the message tool to this chat: not sent twice.
      if (text !== null && !writes.toolSent(chatAddress, text)) reply(last, { text }, "agent", replyTo);
    }

    /**
     * A cron job's agent turn: the prompt is stored as a scheduled event (source
     * `cron:<job>`, never a user turn) and shown to the model in its own envelope; the answer
     * goes to the chat when the job delivers. The cron run's outcome is written in this
     * run's commit.
     */
    async function answerScheduled({ run: cronRun, job, payload }: ScheduledWork): Promise<void> {
      const sessionId = state.sessionId;
      const source = `cron:${job.id}`;
      const event: NewTurn = {
        role: "event",
        content: payload.prompt,
        source,
        metadata: { kind: "scheduled_turn", cron_job_id: job.id, cron_run_id: cronRun.id, job_name: job.name, slot: cronRun.slot.toISOString() } satisfies ScheduledTurnMetadata,
      };
      const earlier = [...writes.pendingTurns(sessionId)];
      writes.appendTurns(sessionId, [event]);
      if (!o.runAgent) {
        writes.finishCronRun(cronRun.id, { status: "failed", error: "no language model is configured (OPENAI_BASE_URL / OPENAI_API_KEY)", sessionId });
        return;
      }
      let failedReply = false;
      const text = await callAgent(sessionId, earlier, [event], () => (failedReply = true));
      if (failedReply) {
        writes.finishCronRun(cronRun.id, { status: "failed", error: "the language model could not be reached", sessionId });
        return;
      }
      const deliveryIds =
        text !== null && payload.deliver
          ? [writes.deliver({ target: chatAddress, message: { text, attachments: [], extra: {} }, source, sessionId })]
          : [];
      writes.finishCronRun(cronRun.id, { status: "succeeded", sessionId, deliveryIds });
    }

    /**
     * An event another session (or an operator) put into this lane: stored as an event turn
     * (its source `agent:<run>` or `api:<token>`, never a user turn), shown to the model in
     * its own envelope, answered in the chat, and the answer recorded on the event so the
     * sender can read it.
     */
    async function answerEvent(event: SessionEvent): Promise<void> {
      // Answered in the session it was sent to: the chat's current one, or an older session
      // of this lane that a sender named (it keeps its own history).
      let sessionId = state.sessionId;
      if (event.sessionId !== sessionId) {
        const named = await sessions.get(event.sessionId);
        if (!named || named.laneKey !== run.laneKey) {
          run.reject(itemOf.get(event.id)!, `agent event ${event.id} is for session ${event.sessionId}, which is not in lane ${run.laneKey}`);
          return;
        }
        sessionId = named.id;
      }
      const turn: NewTurn = {
        role: "event",
        content: event.content,
        source: event.source,
        metadata: agentEventMetadata({ ...event, mode: "enqueue" }),
      };
      const earlier = [...writes.pendingTurns(sessionId)];
      writes.appendTurns(sessionId, [turn]);
      if (!o.runAgent) {
        writes.finishEvent(event.id, { status: "failed", reply: null, error: "no language model is configured (OPENAI_BASE_URL / OPENAI_API_KEY)" });
        return;
      }
      let failedReply = false;
      const text = await callAgent(sessionId, earlier, [turn], () => (failedReply = true), event.depth);
      if (failedReply) {
        writes.finishEvent(event.id, { status: "failed", reply: null, error: "the language model could not be reached" });
        return;
      }
      if (run.signal.reason instanceof RunStoppedError) {
        writes.finishEvent(event.id, { status: "failed", reply: null, error: "the turn was stopped (/stop)" });
        return;
      }
      if (text !== null && !writes.toolSent(chatAddress, text)) {
        writes.deliver({ target: chatAddress, message: { text, attachments: [], extra: {} }, source: "agent", sessionId });
      }
      writes.finishEvent(event.id, { status: "done", reply: text, error: null });
    }

    // The common run (turns and replies) commits in one statement; anything else as a transaction.
    const parts = writes.parts();
    const { deliveryIds, wake } = parts
      ? await run.commitParts(parts.parts).then(() => ({ deliveryIds: parts.deliveryIds, wake: [] }))
      : await run.commit((tx) => writes.commit(tx));
    // After the commit: a crash here leaves queued rows that the delivery sweeper re-enqueues,
    // and lanes that the lane sweeper wakes.
    await Promise.all([o.outbox.dispatch(deliveryIds), o.sessionEvents.wake(wake)]);
  };
}
