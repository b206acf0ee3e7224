import type { Cluster, Redis } from "ioredis";
import { ReplyError } from "ioredis";
import { ChannelSendError, type ChannelSender, type SendProgress } from "@nahida/channels";
import { formatChatAddress, type ChatAddress, type Clock, type OutboundMessage } from "@nahida/contracts";
import { publishToChat } from "./web-chat.bus";
import { outboundItems } from "./web-chat.items";

/** Redis answers that pass: a replica still loading, a script running, a failover under way. */
const PASSING_REPLIES = new Set(["LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "OOM"]);

export interface WebSenderOptions {
  channel: string;
  redis: Redis | Cluster;
  prefix: string;
  clock: Clock;
}

/**
 * The web chat's send side: each part is published to the chat's Redis topic, which the
 * replica holding the visitor's socket listens to. Nobody listening is not a failure: a
 * page that is closed gets the message from the chat's history when it opens.
 */
export class WebSender implements ChannelSender {
  readonly channel: string;

  constructor(private readonly o: WebSenderOptions) {
    this.channel = o.channel;
  }

  async send(target: ChatAddress, message: OutboundMessage, progress: SendProgress): Promise<void> {
    const chat = formatChatAddress(target);
    const items = outboundItems(message, progress.deliveryId, this.o.clock.now());
    for (let index = progress.sentParts; index < items.length; index++) {
      const item = items[index]!;
      await this.publish(() => publishToChat(this.o.redis, this.o.prefix, chat, { type: "message", item }));
      await progress.recordPart(index, item.id, index === items.length - 1);
    }
  }

  async sendChatAction(target: ChatAddress): Promise<void> {
    await this.publish(() => publishToChat(this.o.redis, this.o.prefix, formatChatAddress(target), { type: "typing" }));
  }

  private async publish(call: () => Promise<number>): Promise<void> {
    try {
      await call();
    } catch (error) {
      throw classify(error);
    }
  }
}

/**
 * A refusal Redis answered with did not publish (transient while it passes, permanent when
 * an operator must act: an ACL without PUBLISH); a dropped connection may have. The reply
 * is kept without any arguments it quotes: never the payload.
 */
function classify(error: unknown): ChannelSendError {
  if (error instanceof ReplyError) {
    // Redis's own words, up to where an error would quote a command's arguments.
    const reply = String((error as Error).message).split(/,? with args/)[0]!.slice(0, 200);
    const word = /^[A-Z]+/.exec(reply)?.[0] ?? "ERR";
    return PASSING_REPLIES.has(word)
      ? new ChannelSendError("transient", `redis refused the publish (${reply}); it is retried`)
      : new ChannelSendError("permanent", `redis refused the publish (${reply})`);
  }
  return new ChannelSendError("transient", "the connection to redis failed during the publish", { outcome_unknown: true });
}
