import type { ChatAddress, OutboundMessage } from "@nahida/contracts";

/** Where a send stands; parts before `sentParts` were accepted by the platform already. */
export interface SendProgress {
  /**
   * The delivery's id: the same on every attempt, so a platform that de-duplicates by a
   * client-chosen id (the web chat) can name each part `${deliveryId}:${index}`.
   */
  deliveryId: string;
  sentParts: number;
  /**
   * Persists that part `index` was accepted, with the platform's message id; `last` is true
   * for the message's final part (recording it finishes the delivery). Called before the
   * next part goes out.
   */
  recordPart(index: number, platformMessageId: string, last: boolean): Promise<void>;
}

export type ChannelErrorKind = "rate_limited" | "transient" | "permanent";

/**
 * A failed platform call, classified. Keeps the platform's own fields (`error_code`,
 * `description`, `retry_after`) and never the token or the payload.
 */
export class ChannelSendError extends Error {
  override name = "ChannelSendError";
  constructor(
    readonly kind: ChannelErrorKind,
    readonly description: string,
    /**
     * `outcome_unknown`: no answer arrived after the request may have reached the platform
     * (a dropped connection, a timeout), so the part may have been accepted.
     * `unavailable` (transient only, with `retry_after`): the platform refuses every send
     * until an operator acts (a Milky account logged out, its token refused); the delivery
     * waits `retry_after` between tries without using attempts, up to a bounded time. Only
     * this flag selects that wait: a `retry_after` on any other transient failure (Telegram
     * sends one with some 5xx) is retried with the normal backoff.
     */
    readonly details: { error_code?: number; retry_after?: number; outcome_unknown?: boolean; unavailable?: boolean } = {},
    options?: { cause?: unknown },
  ) {
    super(description, options);
  }
}

/**
 * One platform's send side (port). Implementations split a message into parts in a
 * deterministic way and send only parts from `progress.sentParts` on, so a retried send
 * never repeats what the platform already accepted.
 */
export interface ChannelSender {
  readonly channel: string;
  send(target: ChatAddress, message: OutboundMessage, progress: SendProgress): Promise<void>;
  /** Shows a transient status such as "typing…", where the platform has one. */
  sendChatAction?(target: ChatAddress, action: "typing"): Promise<void>;
}

/** The channels this deployment can send to. */
export class ChannelRegistry {
  private readonly senders = new Map<string, ChannelSender>();

  register(sender: ChannelSender): this {
    if (this.senders.has(sender.channel)) throw new Error(`channel ${sender.channel} is registered twice`);
    this.senders.set(sender.channel, sender);
    return this;
  }

  get(channel: string): ChannelSender | undefined {
    return this.senders.get(channel);
  }

  has(channel: string): boolean {
    return this.senders.has(channel);
  }

  channels(): string[] {
    return [...this.senders.keys()];
  }
}
