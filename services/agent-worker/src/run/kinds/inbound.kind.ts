import { err, ok, parseCommand, type Result, type UserTurnMetadata } from "@nahida/contracts";
import type { InboundMessageRepository, InboundRecord, NewTurn } from "@nahida/db";
import { commandContext, type ChatCommandsOptions } from "../chat-commands";
import type { Run } from "../run";
import { defineLaneKind, type KindItem } from "./lane-kind";

export const NO_LLM_HINT =
  "I can run commands (/help), but no language model is configured yet. Set OPENAI_BASE_URL (and OPENAI_API_KEY) to let me answer.";
export const LLM_FAILED_REPLY = "Sorry, I could not reach the language model. Please try again later.";

export interface InboundKindOptions extends ChatCommandsOptions {
  inbound: InboundMessageRepository;
}

type Segment = { kind: "command"; record: InboundRecord; name: string; args: string } | { kind: "messages"; records: InboundRecord[] };

/** Commands one each, runs of ordinary messages together, in order; a command for another bot is nobody's. */
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

/** A stored platform message of the run's chat: a command, or text for the agent. */
export function inboundKind(o: InboundKindOptions) {
  /** The messages as user turns, answered by one agent call unless `answer` is false (a `/stop` after them in the batch). */
  async function answerMessages(run: Run, batch: InboundRecord[], answer = true): Promise<void> {
    const sessionId = run.sessionId;
    const prompt: NewTurn[] = batch.map((record) => ({
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
    if (!answer) return run.appendTurns(sessionId, prompt);
    const last = batch.at(-1)!;
    const route = { source: "agent", sessionId, inboundMessageId: last.id, ...(run.scope.chat?.type !== "private" ? { replyTo: last.message.messageId } : {}) };
    const answered = await run.callAgent(sessionId, prompt);
    if (answered.kind === "no_llm") run.answer({ text: NO_LLM_HINT }, route);
    else if (answered.kind === "failed") run.answer({ text: answered.reply ?? LLM_FAILED_REPLY }, route);
    else if (answered.kind === "text") run.answer({ text: answered.text }, route);
  }

  async function runCommand(run: Run, part: Extract<Segment, { kind: "command" }>, stoppedHere: boolean): Promise<void> {
    const { record } = part;
    const outcome = await o.commands.run(record.message.text, commandContext(o, run, record.message.sender.roles, stoppedHere), run.lane.signal, { name: part.name, args: part.args });
    // An unknown /word is ordinary text for the agent.
    if (outcome.kind === "not_a_command") return answerMessages(run, [record]);
    if (!outcome.reply) return;
    // Command answers quote the command, as the command contract says.
    const { replyTo, ...reply } = outcome.reply;
    run.answer({ ...reply, text: reply.text ?? "" }, { source: "command", sessionId: run.sessionId, inboundMessageId: record.id, replyTo: replyTo ?? record.message.messageId });
  }

  return defineLaneKind<InboundRecord>({
    kind: "inbound",
    async load(refIds, chatRead) {
      const records = chatRead ? chatRead.inbound : refIds.length ? await o.inbound.getMany([...refIds]) : [];
      const byId = new Map(records.map((r) => [r.id, r]));
      return new Map(refIds.map((id): [string, Result<InboundRecord, string>] => [id, byId.has(id) ? ok(byId.get(id)!) : err(`inbound message ${id} does not exist`)]));
    },
    async handle(items: readonly KindItem<InboundRecord>[], run: Run) {
      const chat = run.scope.chat;
      const own = items.filter((item) => {
        if (item.row.chatAddress === chat?.address) return true;
        run.reject(item.itemId, `inbound message of chat ${item.row.chatAddress} is in the lane of ${chat?.address ?? `session ${run.scope.session.id}`}`);
        return false;
      });
      const parts = segment(own.map((i) => i.row), o.commands.prefix);
      // A `/stop` in the batch stops the answer to the messages before it, which had not
      // started yet (they came together, or their run was superseded): they are kept, not answered.
      const lastStop = parts.findLastIndex((p) => p.kind === "command" && p.name === "stop");
      for (const [index, part] of parts.entries()) {
        if (part.kind === "command") await runCommand(run, part, index === lastStop && parts.slice(0, index).some((p) => p.kind === "messages"));
        else await answerMessages(run, part.records, index > lastStop);
      }
    },
  });
}
