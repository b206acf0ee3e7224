import type { Redis } from "ioredis";
import type { ServerFrame } from "./web-chat.protocol";

/**
 * The Redis channel of one chat's frames. Every gateway replica subscribes to the chats of
 * the sockets it holds, so a frame published once reaches the replica a visitor is on.
 */
export const chatTopic = (prefix: string, chatAddress: string) => `${prefix}:webchat:${chatAddress}`;

/** Publishes a frame to whichever replicas hold sockets of the chat; resolves to how many got it. */
export function publishToChat(redis: Redis, prefix: string, chatAddress: string, frame: ServerFrame): Promise<number> {
  return redis.publish(chatTopic(prefix, chatAddress), JSON.stringify(frame));
}

type Listener = (frame: string) => void;

/**
 * One replica's subscriptions: a chat is subscribed while at least one of its sockets is
 * here. ioredis subscribes again after a reconnect; a frame published while this replica's
 * connection was down is lost to it, and the page finds the message in the history it is
 * given when its socket reconnects.
 */
export class WebChatHub {
  private readonly listeners = new Map<string, Set<Listener>>();

  constructor(
    private readonly subscriber: Redis,
    private readonly prefix: string,
  ) {
    subscriber.on("message", (topic: string, payload: string) => {
      for (const listener of this.listeners.get(topic) ?? []) listener(payload);
    });
  }

  /** Calls `listener` with each frame (as JSON) published to the chat; resolves once subscribed, to the function that leaves. */
  async join(chatAddress: string, listener: Listener): Promise<() => Promise<void>> {
    const topic = chatTopic(this.prefix, chatAddress);
    let listeners = this.listeners.get(topic);
    if (!listeners) {
      listeners = new Set();
      this.listeners.set(topic, listeners);
    }
    listeners.add(listener);
    // Subscribed before the history is read, so nothing falls between the two.
    await this.subscriber.subscribe(topic);
    return async () => {
      listeners.delete(listener);
      if (listeners.size > 0 || this.listeners.get(topic) !== listeners) return;
      this.listeners.delete(topic);
      await this.subscriber.unsubscribe(topic).catch(() => undefined);
    };
  }

  /** Chats with a socket on this replica. */
  get chats(): number {
    return this.listeners.size;
  }
}
