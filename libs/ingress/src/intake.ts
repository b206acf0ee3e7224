import { InboundMessage, MessageContext, parseChatAddress, parseCommand, storableJson } from "@nahida/contracts";
import type { Cluster, Redis } from "ioredis";
import { isDataError, laneKeyForChat, type InboundMessageRepository, type InboundQuarantineRepository, type LaneAppend } from "@nahida/db";
import { interruptLane, supersedeLane, wakeLane } from "@nahida/lanes";
import { currentTraceparent, withSpan, type InboundMetrics } from "@nahida/observability";
import type { TypedQueue } from "@nahida/queue";

/** One normalized platform event, ready to be stored. */
export interface IntakeCandidate {
  /** The channel instance name; equals `message.channel`, `context.channel` and the chat address's channel. */
  channel: string;
  /** The bot or account the event was delivered to (the Telegram bot id, the Milky self_id). */
  accountId: string;
  /** The event's platform identity within the account (`update:<update_id>`). */
  dedupeKey: string;
  message: InboundMessage;
  context: MessageContext;
  /** The platform event as received, stored for audit; never shown to the LLM. */
  raw: unknown;
}

/**
 * What a channel's normalizer makes of one platform event: a candidate without its
 * instance; a reason to drop it (a kind of event Nahida does not handle); or a reason it
 * could not be read at all (nested too deep, malformed), which is quarantined, not dropped.
 */
export type NormalizedEvent =
  | ({ kind: "message" } & Omit<IntakeCandidate, "channel" | "accountId">)
  | { kind: "ignored"; reason: string }
  | { kind: "unreadable"; reason: string; raw: unknown };

/** An event quarantined instead of stored: what it was delivered to, why, and the event. */
export interface QuarantineCandidate {
  channel: string;
  accountId: string;
  reason: string;
  raw: unknown;
}

/**
 * The result of offering a candidate. `ignored` is never produced by the intake itself; it
 * lets an adapter report a normalizer's verdict in the same type.
 */
export type IntakeOutcome =
  | { kind: "stored"; inboundMessageId: string }
  /** The platform delivered this event before; its job was added again under the same id. */
  | { kind: "duplicate"; inboundMessageId: string }
  | { kind: "ignored"; reason: string }
  /**
   * It cannot be stored as a message (Postgres refused the data, it breaks the
   * InboundMessage contract, it could not be read): it is kept in `inbound_quarantine`
   * instead, so the platform may be acknowledged. Storing it again would never succeed.
   */
  | { kind: "quarantined"; quarantineId: string; reason: string };

export interface IntakeOptions {
  inbound: Pick<InboundMessageRepository, "store">;
  /** Where what cannot be stored as a message is kept. */
  quarantine: Pick<InboundQuarantineRepository, "record">;
  /** Wakes a lane that was given an item (`LaneProducer.wake`). */
  wake(laneKey: string): Promise<void>;
  /**
   * Interrupts the run in progress in a lane at once (a `/stop`): the lane itself would only
   * reach the command after the run it is meant to stop.
   */
  interrupt(laneKey: string): Promise<void>;
  /**
   * Supersedes the run in progress in a lane by the message at `seq` (a lane in `interrupt`
   * mode): that run commits nothing and the next one answers everything together.
   */
  supersede(laneKey: string, seq: bigint): Promise<void>;
  /** Counts every outcome by channel (`nahida_inbound_events_total`). */
  metrics?: InboundMetrics;
  /** How long an event's identity is a duplicate (DEFAULT_DEDUPE_WINDOW_MS, 24 hours). */
  dedupeWindowMs?: number;
}

export interface Intake {
  /**
   * Stores the candidate, in its chat's lane when the agent should see it, and wakes the
   * lane; resolves only when both are done, so the caller may then acknowledge the
   * platform. Rejects on an outage (Postgres or Redis unreachable): the platform must then
   * deliver the event again.
   */
  accept(candidate: IntakeCandidate): Promise<IntakeOutcome>;
  /** An event the channel's normalizer dropped: never stored, counted with the rest. */
  ignore(channel: string, reason: string): IntakeOutcome;
  /** An event the normalizer could not read: kept in quarantine; rejects on an outage, like `accept`. */
  quarantine(event: QuarantineCandidate): Promise<IntakeOutcome>;
  /** A normalizer's verdict on an event of `channel` and `accountId`, carried out. */
  offer(channel: string, accountId: string, event: NormalizedEvent): Promise<IntakeOutcome>;
}

/**
 * A platform event made storable: NUL dropped and lone surrogates replaced in every string
 * and key, with no recursion (`storableJson`); an error when it nests deeper than any
 * platform sends.
 */
export const cleanEvent = <T>(value: T) => storableJson(value);

/**
 * Whether the agent sees a message: in private chats always; in groups when it mentions the
 * bot, replies to it or is a command, or else when the chat's trigger mode is `always`
 * (read in the store statement); never a command for another bot.
 */
function laneAppend(message: InboundMessage, chatType: string): { append: LaneAppend; command: { name: string } | null } {
  const command = message.command ?? parseCommand(message.text.trim());
  if (message.command?.addressedToOther) return { append: "never", command };
  const addressed = chatType === "private" || message.mentionsBot || command !== null;
  return { append: addressed ? "always" : "if_trigger_always", command };
}

/**
 * The one path every inbound event takes into Nahida, whatever its channel. De-duplication
 * is per (channel, account, dedupeKey): two bots of one instance, or two instances, never
 * swallow each other's events. The message goes into its lane in the statement that stores
 * it, so a session's messages run in the ingress's commit order. A redelivered event is
 * stored and queued once; a wake lost in a crash after the commit is found by the lane
 * sweeper.
 */
export function createIntake(options: IntakeOptions): Intake {
  const counted = (channel: string, outcome: IntakeOutcome): IntakeOutcome => {
    options.metrics?.events.inc({ channel, outcome: outcome.kind });
    return outcome;
  };
  return {
    async accept(candidate) {
      // The span every channel's events pass through; the lane item keeps it for the run.
      return withSpan("ingress.accept", { attributes: { "nahida.channel": candidate.channel } }, async (span) => {
        const outcome = await store(candidate);
        span.setAttribute("nahida.intake.outcome", outcome.kind);
        return counted(candidate.channel, outcome);
      });
    },
    ignore(channel, reason) {
      return counted(channel, { kind: "ignored", reason });
    },
    async quarantine(event) {
      return counted(event.channel, await quarantine(event));
    },
    async offer(channel, accountId, event) {
      switch (event.kind) {
        case "ignored":
          return this.ignore(channel, event.reason);
        case "unreadable":
          return this.quarantine({ channel, accountId, reason: event.reason, raw: event.raw });
        case "message": {
          const { kind: _kind, ...candidate } = event;
          return this.accept({ channel, accountId, ...candidate });
        }
        default: {
          const unreachable: never = event;
          throw new Error(`unknown normalized event ${JSON.stringify(unreachable)}`);
        }
      }
    },
  };

  async function quarantine(event: QuarantineCandidate): Promise<IntakeOutcome> {
    const kept = await options.quarantine.record(event);
    return { kind: "quarantined", quarantineId: kept.id, reason: event.reason };
  }

  async function store(candidate: IntakeCandidate): Promise<IntakeOutcome> {
    const refuse = (reason: string) => quarantine({ channel: candidate.channel, accountId: candidate.accountId, reason, raw: candidate.raw });
    const cleaned = cleanEvent(candidate);
    if (!cleaned.ok) return refuse(`the event ${cleaned.error}`);
    const clean = cleaned.value;
    const checked = checkCandidate(clean);
    if (checked.kind === "unstorable") return refuse(checked.reason);
    const laneKey = laneKeyForChat(checked.message.chat);
    const { append, command } = laneAppend(checked.message, checked.chatType);
    let stored;
    try {
      stored = await options.inbound.store(
        {
          dedupeKey: `${clean.accountId}:${clean.dedupeKey}`,
          // Shim, removed in 0.2.0: keys were not scoped by account before 0.1.0.
          legacyDedupeKey: clean.dedupeKey,
          message: checked.message,
          context: checked.context,
          raw: clean.raw,
          ...(options.dedupeWindowMs !== undefined ? { dedupeWindowMs: options.dedupeWindowMs } : {}),
        },
        { key: laneKey, append, traceparent: currentTraceparent() },
      );
    } catch (error) {
      if (!isDataError(error)) throw error;
      return refuse(`Postgres refused the data: ${postgresMessage(error)}`);
    }
    if (stored.lane) {
      if (command?.name === "stop") await options.interrupt(laneKey);
      else if (stored.lane.mode === "interrupt") await options.supersede(laneKey, stored.lane.seq);
      await options.wake(laneKey);
    }
    return { kind: stored.created ? "stored" : "duplicate", inboundMessageId: stored.id };
  }
}

type Checked = { kind: "valid"; message: InboundMessage; context: MessageContext; chatType: string } | { kind: "unstorable"; reason: string };

// Adapters are typed, but a candidate reaching the ledger must hold the contract at run time:
// the agent worker parses these rows back and cannot recover a malformed one.
function checkCandidate(candidate: IntakeCandidate): Checked {
  const unstorable = (reason: string): Checked => ({ kind: "unstorable", reason });
  if (candidate.accountId === "") return unstorable("accountId is empty");
  if (candidate.dedupeKey === "") return unstorable("dedupeKey is empty");
  const message = InboundMessage.safeParse(candidate.message);
  if (!message.success) return unstorable(`message breaks the InboundMessage contract: ${message.error.issues[0]?.message ?? "invalid"}`);
  const context = MessageContext.safeParse(candidate.context);
  if (!context.success) return unstorable(`context breaks the MessageContext contract: ${context.error.issues[0]?.message ?? "invalid"}`);
  const address = parseChatAddress(message.data.chat);
  const channels = [message.data.channel, context.data.channel, address.ok ? address.value.channel : undefined];
  if (!address.ok || channels.some((channel) => channel !== candidate.channel)) {
    return unstorable(`message, context and chat address must all be of channel ${JSON.stringify(candidate.channel)}`);
  }
  return { kind: "valid", message: message.data, context: context.data, chatType: address.value.type };
}

// Prisma wraps the driver's error in text about the query invocation; the driver's part is the useful one.
function postgresMessage(error: unknown): string {
  const cause = (error as { meta?: { driverAdapterError?: { cause?: { originalMessage?: unknown; originalCode?: unknown } } } }).meta
    ?.driverAdapterError?.cause;
  if (typeof cause?.originalMessage === "string") return `${cause.originalMessage} (${String(cause.originalCode)})`;
  // pg's own error (the store goes through pg directly) carries the SQLSTATE as `code`.
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === "string" ? `${message} (${code})` : message;
}

/**
 * The intake as a deployment wires it: lanes are woken on the `lanes` queue and `/stop`
 * interrupts through the lanes' pub/sub channel.
 */
export function createLaneIntake(o: {
  inbound: IntakeOptions["inbound"];
  quarantine: IntakeOptions["quarantine"];
  lanes: TypedQueue<"lanes">;
  redis: Redis | Cluster;
  prefix: string;
  metrics?: InboundMetrics;
  dedupeWindowMs?: number;
}): Intake {
  return createIntake({
    inbound: o.inbound,
    quarantine: o.quarantine,
    ...(o.dedupeWindowMs !== undefined ? { dedupeWindowMs: o.dedupeWindowMs } : {}),
    ...(o.metrics ? { metrics: o.metrics } : {}),
    wake: (laneKey) => wakeLane(o.lanes, laneKey),
    interrupt: (laneKey) => interruptLane(o.redis, o.prefix, laneKey),
    supersede: (laneKey, seq) => supersedeLane(o.redis, o.prefix, laneKey, seq),
  });
}
