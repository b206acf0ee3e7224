import type { Redis } from "ioredis";
import { encodeLaneItem, parseChatAddress, type Clock } from "@nahida/contracts";
import { laneKeyForChat, type InboundMessageRepository, type InboundRecord, type SessionRepository } from "@nahida/db";
import type { LaneProducer } from "@nahida/lanes";
import { PermanentJobError } from "@nahida/queue";
import { parseCommand } from "../commands/command-router";

export interface MessageReceivedOptions {
  inbound: InboundMessageRepository;
  sessions: SessionRepository;
  lanes: LaneProducer;
  redis: Redis;
  /** Pub/sub channel on which `/stop` reaches whichever worker runs the lane. */
  abortChannel: string;
  commandPrefix: string;
  clock: Clock;
}

/** A /stop older than this no longer interrupts the run in progress. */
const STOP_FRESH_MS = 10_000;

export type MessageReceivedOutcome = "queued" | "not_addressed" | "for_another_bot";

/**
 * `inbound/message.received`: decides whether the agent should see a stored message and
 * puts it in its chat's lane. In groups only addressed messages (mention, reply to the bot,
 * command) go on, unless the chat's trigger mode is `always`. `/stop` is also broadcast at
 * once, since the lane itself would only reach it after the run it is meant to stop.
 */
export function createMessageReceivedHandler(o: MessageReceivedOptions) {
  return async function messageReceived({ inboundMessageId }: { inboundMessageId: string }): Promise<MessageReceivedOutcome> {
    const record = await o.inbound.get(inboundMessageId);
    if (!record) throw new PermanentJobError(`inbound message ${inboundMessageId} does not exist`);
    const address = parseChatAddress(record.chatAddress);
    if (!address.ok) {
      // Routed nowhere, for good: the sweeper must not retry it forever.
      await o.inbound.markRouted(record.id);
      throw new PermanentJobError(address.error.message);
    }

    const outcome = await route(record, address.value.type);
    await o.inbound.markRouted(record.id);
    return outcome;
  };

  async function route(record: InboundRecord, chatType: string): Promise<MessageReceivedOutcome> {
    const fromIngress = record.message.command;
    if (fromIngress?.addressedToOther) return "for_another_bot";
    const command = fromIngress ?? parseCommand(record.message.text.trim(), o.commandPrefix);

    const chat = await o.sessions.ensureChat(record.chatAddress, record.channel, record.message.chatDisplayName);
    const addressed = chatType === "private" || record.message.mentionsBot || command !== null || chat.triggerMode === "always";
    if (!addressed) return "not_addressed";

    const laneKey = laneKeyForChat(record.chatAddress);
    const item = encodeLaneItem({ kind: "inbound", inboundMessageId: record.id });
    const { created } = await o.lanes.append(laneKey, item.kind, item.refId);
    // Only a fresh /stop interrupts: a retried one, or one the sweeper found late, would
    // stop a run that is answering something newer.
    const fresh = o.clock.now().getTime() - record.receivedAt.getTime() < STOP_FRESH_MS;
    if (created && fresh && command?.name === "stop") await o.redis.publish(o.abortChannel, laneKey);
    return "queued";
  }
}
