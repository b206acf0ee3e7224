import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { parseChatAddress, type OutboundMessage } from "@nahida/contracts";
import {
  DeliveryRepository,
  SessionRepository,
  TurnRepository,
  type InboundMessageRepository,
  type InboundRecord,
  type NewTurn,
  type PrismaClient,
  type Tx,
} from "@nahida/db";
import { RunStoppedError, type LaneHandler, type LaneRunContext } from "@nahida/lanes";
import type { Logger } from "@nahida/observability";
import type { TypedQueue } from "@nahida/queue";
import type { RunAgent } from "../agent/agent-loop";
import { applyReplySignals } from "../agent/reply-signals";
import type { CommandContext } from "../commands/command-context";
import { parseCommand, type CommandRouter } from "../commands/command-router";
import type { ContextBuilder, UserTurnMetadata } from "../context/context-builder";

export const NO_LLM_HINT =
  "I can run commands (/help), but no language model is configured yet. Set OPENAI_BASE_URL (and OPENAI_API_KEY) to let me answer.";
export const LLM_FAILED_REPLY = "Sorry, I could not reach the language model. Please try again later.";

export interface SessionRunHandlerOptions {
  prisma: PrismaClient;
  redis: Redis;
  prefix: string;
  inbound: InboundMessageRepository;
  outbound: TypedQueue<"outbound">;
  commands: CommandRouter<CommandContext>;
  contextBuilder: ContextBuilder;
  /** Null when no LLM is configured: commands still work, free text gets a hint. */
  runAgent: RunAgent | null;
  model: string | null;
  historyTurns: number;
  /** A delivery still queued after this long expires instead of arriving late. */
  deliveryTtlMs: number;
  /** The lane's attempt limit; on the last attempt an LLM failure is answered with an apology. */
  maxAttempts: number;
  logger: Logger;
}

const TYPING_RENEW_MS = 4_000;

/** Key marking that a lane's run was stopped, read by the `/stop` that caused it. */
export const stoppedKey = (prefix: string, laneKey: string) => `${prefix}:lanes:stopped:${laneKey}`;

interface PendingSession {
  id: string;
  turns: NewTurn[];
}

/** Everything one run will write, applied in its fenced commit. */
class RunWrites {
  readonly sessions = new Map<string, PendingSession>();
  readonly deferred: ((tx: Tx) => Promise<void>)[] = [];
  readonly deliveries: { message: OutboundMessage; sessionId: string; inboundMessageId: string; source: string }[] = [];

  turns(sessionId: string): NewTurn[] {
    let pending = this.sessions.get(sessionId);
    if (!pending) {
      pending = { id: sessionId, turns: [] };
      this.sessions.set(sessionId, pending);
    }
    return pending.turns;
  }
}

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
 * The lane handler of the agent worker: for a batch of inbound messages of one chat, run
 * commands and the agent in order, then commit turns and deliveries in one fenced
 * transaction and enqueue the deliveries. A retried run recomputes everything; only the
 * run that commits leaves turns and replies behind.
 */
export function createSessionRunHandler(o: SessionRunHandlerOptions): LaneHandler {
  const sessions = new SessionRepository(o.prisma);
  const turns = new TurnRepository(o.prisma);
  const deliveries = new DeliveryRepository(o.prisma);

  return async function handleRun(run: LaneRunContext): Promise<void> {
    const records = await o.inbound.getMany(run.items.filter((i) => i.kind === "inbound").map((i) => i.refId));
    if (records.length === 0) return;
    const chatAddress = records[0]!.chatAddress;
    const address = parseChatAddress(chatAddress);
    if (!address.ok) throw new Error(`stored inbound has a bad chat address: ${address.error.message}`);
    const channel = records[0]!.channel;
    const chatType = address.value.type;

    const { chat, session } = await sessions.resolve(chatAddress, channel);
    const writes = new RunWrites();
    const state = { sessionId: session.id, triggerMode: chat.triggerMode, cleared: new Set<string>() };
    const isGroup = chatType !== "private";

    /** Queues a reply; `replyTo` is explicit so that "no quote" stays possible. */
    const reply = (record: InboundRecord, message: Partial<OutboundMessage>, source: string, replyTo: string | undefined) => {
      writes.deliveries.push({
        message: {
          text: message.text ?? "",
          attachments: message.attachments ?? [],
          extra: message.extra ?? {},
          ...(replyTo !== undefined ? { replyTo } : {}),
        },
        sessionId: state.sessionId,
        inboundMessageId: record.id,
        source,
      });
    };

    /** Whether the database holds history for this session that this run has not wiped. */
    const hasStoredHistory = (sessionId: string) => sessionId === session.id && !state.cleared.has(sessionId);
    const history = async (sessionId: string) => (hasStoredHistory(sessionId) ? turns.recent(sessionId, o.historyTurns) : []);

    for (const part of segment(records, o.commands.prefix)) {
      if (part.kind === "command") {
        const context: CommandContext = {
          chatAddress,
          chatType,
          channel,
          sessionId: state.sessionId,
          triggerMode: state.triggerMode,
          senderRoles: part.record.message.sender.roles,
          model: o.model,
          turnCount: async () =>
            (hasStoredHistory(state.sessionId) ? await turns.count(state.sessionId) : 0) + writes.turns(state.sessionId).length,
          rotateSession: () => {
            const id = randomUUID();
            writes.deferred.push(async (tx) => {
              await tx.session.create({ data: { id, laneKey: run.laneKey, chatAddress, channel } });
              await tx.chat.update({ where: { address: chatAddress }, data: { currentSessionId: id } });
            });
            state.sessionId = id;
            return id;
          },
          defer: (write) => writes.deferred.push(write),
          clearHistory: () => {
            const id = state.sessionId;
            state.cleared.add(id);
            writes.turns(id).length = 0;
            writes.deferred.push(async (tx) => void (await turns.clear(id, tx)));
          },
          setTriggerMode: (mode) => {
            state.triggerMode = mode;
            writes.deferred.push((tx) => sessions.setTriggerMode(chatAddress, mode, tx));
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
     * "typing…" in the chat while the model works: platforms show it for about 5 s, so it
     * is renewed every 4 s. Best effort; a failure to enqueue it is ignored.
     */
    function showTyping(): () => void {
      const send = () => void o.outbound.add("chat.action", { target: chatAddress, action: "typing" }).catch(() => undefined);
      send();
      const timer = setInterval(send, TYPING_RENEW_MS);
      return () => clearInterval(timer);
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
        runId: run.runId,
      }));
      const pending = writes.turns(sessionId);
      const earlier = [...pending];
      pending.push(...userTurns);
      const last = batch.at(-1)!;
      const replyTo = isGroup ? last.message.messageId : undefined;

      if (!o.runAgent) {
        reply(last, { text: NO_LLM_HINT }, "agent", replyTo);
        return;
      }
      const messages = await o.contextBuilder.build(await history(sessionId), [...earlier, ...userTurns].map((t) => ({ role: t.role, content: t.content, metadata: t.metadata ?? {} })));
      if (run.signal.reason instanceof RunStoppedError) return;
      let result;
      const stopTyping = showTyping();
      try {
        result = await o.runAgent(messages, { sessionId, chatAddress, runId: run.runId, signal: run.signal, user: sessionId });
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
      for (const turn of result.turns) {
        pending.push(
          turn.role === "assistant"
            ? { role: "assistant", content: turn.content, metadata: { tool_calls: turn.toolCalls }, source: "agent", runId: run.runId }
            : { role: "tool", content: turn.content, metadata: { tool_call_id: turn.toolCallId, name: turn.name }, source: "agent", runId: run.runId },
        );
      }
      const finalText = result.finalText ?? `I stopped after ${result.iterations} steps without finishing. Please ask again or narrow the request.`;
      const decision = applyReplySignals(finalText);
      if (decision.action === "suppress") {
        o.logger.debug({ laneKey: run.laneKey, reason: decision.reason }, "reply suppressed");
        return;
      }
      pending.push({ role: "assistant", content: decision.text, source: "agent", runId: run.runId });
      reply(last, { text: decision.text }, "agent", replyTo);
    }

    await enqueueDeliveries(await commit(run, writes));

    async function commit(current: LaneRunContext, pending: RunWrites): Promise<string[]> {
      return current.commit(async (tx) => {
        for (const write of pending.deferred) await write(tx);
        for (const [id, entry] of pending.sessions) {
          if (entry.turns.length > 0) await turns.append(id, entry.turns, tx);
          await tx.session.updateMany({ where: { id }, data: { lastActivityAt: new Date() } });
        }
        const ids: string[] = [];
        const expiresAt = new Date(Date.now() + o.deliveryTtlMs);
        for (const d of pending.deliveries) {
          const row = await deliveries.create(
            { target: chatAddress, message: d.message, source: d.source, sessionId: d.sessionId, inboundMessageId: d.inboundMessageId, runId: current.runId, expiresAt },
            tx,
          );
          ids.push(row.id);
        }
        return ids;
      });
    }
  };

  async function enqueueDeliveries(ids: string[]): Promise<void> {
    // After the commit: a crash here leaves queued rows that the delivery sweeper re-enqueues.
    for (const deliveryId of ids) await o.outbound.add("delivery.send", { deliveryId }, { jobId: deliveryId });
  }
}

