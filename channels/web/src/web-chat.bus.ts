import type { Cluster, Redis } from "ioredis";
import type { ServerFrame } from "./web-chat.protocol";

/**
 * The Redis channel of one chat's frames. Every gateway replica subscribes to the chats of
 * the sockets it holds, so a frame published once reaches the replica a visitor is on.
 */
export const chatTopic = (prefix: string, chatAddress: string) => `${prefix}:webchat:${chatAddress}`;

/** Publishes a frame to whichever replicas hold sockets of the chat; resolves to how many got it. */
export function publishToChat(redis: Redis | Cluster, prefix: string, chatAddress: string, frame: ServerFrame): Promise<number> {
  return redis.publish(chatTopic(prefix, chatAddress), JSON.stringify(frame));
}

type Listener = (frame: string) => void;

/** How long a socket waits to be subscribed (Redis may be away) before it is closed. */
const JOIN_TIMEOUT_MS = 5_000;

/**
 * One replica's subscriptions: a chat is subscribed while at least one of its sockets is
 * here. A frame published while this replica's subscriber was disconnected never reaches
 * it, so when the subscriber is back `onReconnected` is called: the replica then closes its
 * sockets, and each page reconnects and is sent the history, which holds what it missed.
 */
export class WebChatHub {
  private readonly listeners = new Map<string, Set<Listener>>();
  private connectedBefore = false;

  constructor(
    private readonly subscriber: Redis | Cluster,
    private readonly prefix: string,
    onReconnected: () => void,
  ) {
    subscriber.on("message", (topic: string, payload: string) => {
      for (const listener of this.listeners.get(topic) ?? []) listener(payload);
    });
    subscriber.on("ready", () => {
      if (this.connectedBefore) onReconnected();
      this.connectedBefore = true;
    });
  }

  /**
   * Calls `listener` with each frame (as JSON) published to the chat; resolves once
   * subscribed, to the function that leaves; rejects when Redis does not subscribe in time.
   */
  async join(chatAddress: string, listener: Listener): Promise<() => Promise<void>> {
    const topic = chatTopic(this.prefix, chatAddress);
    let listeners = this.listeners.get(topic);
    if (!listeners) {
      listeners = new Set();
      this.listeners.set(topic, listeners);
    }
    // Refused at once while Redis is away: a queued SUBSCRIBE per waiting page would pile up.
    if (this.subscriber.status !== "ready") throw new Error("redis is not connected");
    listeners.add(listener);
    const leave = async () => {
      listeners.delete(listener);
      if (listeners.size > 0 || this.listeners.get(topic) !== listeners) return;
      this.listeners.delete(topic);
      await this.subscriber.unsubscribe(topic).catch(() => undefined);
    };
    // Subscribed before the history is read, so nothing falls between the two.
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.subscriber.subscribe(topic),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("redis did not subscribe in time")), JOIN_TIMEOUT_MS))),
      ]);
    } catch (error) {
      await leave();
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return leave;
  }

  /** Chats with a socket on this replica. */
  get chats(): number {
    return this.listeners.size;
  }
}
