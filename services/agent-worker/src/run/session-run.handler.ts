import type { Redis } from "ioredis";
import { decodeLaneItem, parseChatAddress, type Clock, type OutboundMessage } from "@nahida/contracts";
import type { InboundMessageRepository, InboundRecord, NewTurn, SessionRepository, TurnRepository } from "@nahida/db";
import { RunStoppedError, type LaneHandler, type LaneRunContext } from "@nahida/lanes";
import type { Logger } from "@nahida/observability";
import type { Outbox } from "@nahida/outbox";
import type { TypedQueue } from "@nahida/queue";
import type { RunAgent } from "../agent/agent-loop";
import { applyReplySignals } from "../agent/reply-signals";
import type { CommandContext } from "../commands/command-context";
import { parseCommand, type CommandRouter } from "../commands/command-router";
import type { ContextBuilder, UserTurnMetadata } from "../context/context-builder";
import { RunWrites } from "./run-writes";

export const NO_LLM_HINT =
  "I can run commands (/help), but no language model is configured yet. Set OPENAI_BASE_URL (and OPENAI_API_KEY) to let me answer.";
export const LLM_FAILED_REPLY = "Sorry, I could not reach the language model. Please try again later.";

export interface SessionRunHandlerOptions {
  redis: Redis;
  prefix: string;
  inbound: InboundMessageRepository;
  sessions: SessionRepository;
  turns: TurnRepository;
  outbox: Outbox;
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

type Segment = { kind: "command"; record: InboundRecord; name: string; args: string } | { kind: "messages"; records: InboundRecord[] };

/** Splits a batch into commands (one each) and runs of ordinary messages, keeping order. */
function segment(records: InboundRecord[], prefix: string): Segment[] {
  const segments: Segment[] = [];
  for (const record of records) {
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

  /** Reads the batch's rows; items that cannot be handled are rejected with their reason. */
  async function itemsOf(run: LaneRunContext): Promise<InboundRecord[]> {
    const inboundItems: { itemId: string; inboundMessageId: string }[] = [];
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
        case "agent_event":
        case "scheduled_turn":
        case "subagent_result":
          // Their producers come with the cross-session, scheduler and sub-agent work; until
          // then such an item fails where it can be seen instead of vanishing.
          run.reject(row.id, `this worker does not handle ${item.value.kind} lane items yet`);
          break;
        default: {
          const unreachable: never = item.value;
          run.reject(row.id, `unhandled lane item ${JSON.stringify(unreachable)}`);
        }
      }
    }
    const records = await o.inbound.getMany(inboundItems.map((i) => i.inboundMessageId));
    const found = new Set(records.map((r) => r.id));
    for (const i of inboundItems) if (!found.has(i.inboundMessageId)) run.reject(i.itemId, `inbound message ${i.inboundMessageId} does not exist`);
    return records;
  }

  return async function handleRun(run: LaneRunContext): Promise<void> {
    const fetched = await itemsOf(run);
    if (fetched.length === 0) return;
    const lane = await sessions.resolveLane(run.laneKey);
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
    const records = fetched.filter((record) => {
      if (record.chatAddress === chatAddress) return true;
      run.reject(itemOf.get(record.id)!, `inbound message of chat ${record.chatAddress} is in the lane of ${chatAddress}`);
      return false;
    });

    const writes = new RunWrites({ runId: run.runId, outbox: o.outbox, sessions, turns, clock: o.clock });
    const state = { sessionId: session.id, triggerMode: chat.triggerMode };

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

    /** Whether the database holds history for this session that this run has not wiped. */
    const hasStoredHistory = (sessionId: string) => sessionId === session.id && !writes.isCleared(sessionId);
    const history = async (sessionId: string) => (hasStoredHistory(sessionId) ? turns.recent(sessionId, o.historyTurns) : []);

    for (const part of segment(records, o.commands.prefix)) {
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
          consumeStopped: async () => (await o.redis.getdel(stoppedKey(o.prefix, run.laneKey))) !== null,
          commandList: () => o.commands.list(),
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
      const messages = await o.contextBuilder.build(
        await history(sessionId),
        [...earlier, ...userTurns].map((t) => ({ role: t.role, content: t.content, metadata: t.metadata ?? {} })),
      );
      if (run.signal.reason instanceof RunStoppedError) return;
      let result;
      const tools = writes.toolOutbox();
      const stopTyping = showTyping();
      try {
        result = await o.runAgent(messages, {
          sessionId,
          chatAddress,
          runId: run.runId,
          signal: run.signal,
          user: sessionId,
          outbox: tools.outbox,
        });
      } catch (error) {
        if (run.signal.reason instanceof RunStoppedError) {
          // `/stop`: keep what the user said, send nothing, and tell the /stop that follows.
          await o.redis.set(stoppedKey(o.prefix, run.laneKey), run.runId, "PX", 10 * 60_000);
          return;
        }
        if (run.signal.aborted) throw error;
        if (run.items.some((i) => i.attempts >= o.maxAttempts)) {
          o.logger.error({ err: (error as Error).message, laneKey: run.laneKey }, "LLM failed on the last attempt");
          reply(last, { text: LLM_FAILED_REPLY }, "agent", replyTo);
          return;
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
        return;
      }
      writes.appendTurns(sessionId, [{ role: "assistant", content: decision.text, source: "agent" }]);
      reply(last, { text: decision.text }, "agent", replyTo);
    }

    const deliveryIds = await run.commit((tx) => writes.commit(tx));
    // After the commit: a crash here leaves queued rows that the delivery sweeper re-enqueues.
    await o.outbox.dispatch(deliveryIds);
  };
}
