import type { WebSocket } from "ws";
import type { Cluster, Redis } from "ioredis";
import type { ChatTranscript } from "@nahida/channels";
import { formatChatAddress, type Clock } from "@nahida/contracts";
import type { Intake } from "@nahida/ingress";
import type { Logger } from "@nahida/observability";
import { publishToChat, type WebChatHub } from "./web-chat.bus";
import { inboundItem, transcriptItems } from "./web-chat.items";
import { normalizeWebChatEvent, visitorChat, type WebChatEvent } from "./web-chat.normalizer";
import { ClientFrameSchema } from "./web-chat.client-frame";
import { CLOSE_UNAUTHORIZED, type ServerFrame } from "./web-chat.protocol";
import type { WebEnv } from "./web.env";
import { verifyVisitorToken, type Visitor } from "./web-visitor";

/** A page must say who it is this soon after connecting. */
const HELLO_TIMEOUT_MS = 10_000;
/** Frames of one socket waiting to be handled; a page sends one at a time, a flood is closed. */
const MAX_QUEUED_FRAMES = 32;

export interface WebChatSocketContext {
  channel: string;
  config: WebEnv;
  intake: Intake;
  redis: Redis | Cluster;
  prefix: string;
  hub: WebChatHub;
  transcript: ChatTranscript;
  clock: Clock;
  logger: Logger;
  /** The opaque key a visitor's messages carry to the room (`visitorKey`), never their id. */
  senderKey: (visitorId: string) => string;
}

/**
 * One page's socket: a `hello` names the visitor (their token, or the anonymous cookie the
 * upgrade carried), then the chat's history is sent and every frame published to the chat
 * follows; each `message` is stored through the intake and acknowledged. A page's frames
 * are handled one at a time, in order, so its messages are stored in the order it sent them.
 */
export function serveWebChatSocket(socket: WebSocket, cookieVisitor: Visitor | null, c: WebChatSocketContext): void {
  let visitor: Visitor | null = null;
  let chat = "";
  let leave: (() => Promise<void>) | null = null;
  let closed = false;
  let queued = 0;
  let queue: Promise<void> = Promise.resolve();
  const send = (frame: ServerFrame) => socket.readyState === socket.OPEN && socket.send(JSON.stringify(frame));
  // Closing stops at once what is still queued: nothing more is stored for a socket that is going.
  const close = (code: number, reason: string) => {
    closed = true;
    socket.close(code, reason);
  };
  const helloTimer = setTimeout(() => close(CLOSE_UNAUTHORIZED, "no hello"), HELLO_TIMEOUT_MS);

  socket.on("message", (data, isBinary) => {
    if (++queued > MAX_QUEUED_FRAMES) return close(1008, "too many frames at once");
    queue = queue
      .then(() => handle(data, isBinary))
      .catch((error: unknown) => {
        c.logger.warn({ err: (error as Error).message, channel: c.channel }, "web chat: a frame failed");
        send({ type: "error", code: "unavailable", message: "the chat is unavailable for a moment; reconnecting" });
        close(1011, "unavailable");
      })
      .finally(() => queued--);
  });
  socket.on("close", () => {
    closed = true;
    clearTimeout(helloTimer);
    void leave?.();
  });

  async function handle(data: unknown, isBinary: boolean): Promise<void> {
    if (closed) return;
    const frame = isBinary ? undefined : ClientFrameSchema.safeParse(parseJson(String(data)));
    if (!frame?.success) return void send({ type: "error", code: "bad_frame", message: frame?.error.issues[0]?.message ?? "frames are JSON text" });
    switch (frame.data.type) {
      case "hello":
        return hello(frame.data.token);
      case "message":
        return message(frame.data.id, frame.data.text);
    }
  }

  async function hello(token: string | undefined): Promise<void> {
    if (visitor) return void send({ type: "error", code: "bad_frame", message: "hello was already said" });
    const identified = token !== undefined ? await verifyVisitorToken(token, c.config.SECRET, c.clock.now()) : null;
    if (identified && !identified.ok) return refuse(identified.error);
    const who = identified?.value ?? cookieVisitor;
    if (!who) return refuse(c.config.ANONYMOUS ? "open the chat page first, or bring a visitor token" : "this chat needs a visitor token from the site that links to it");
    clearTimeout(helloTimer);
    visitor = who;
    chat = formatChatAddress(visitorChat(c.channel, who));
    // Ready first: a live frame may follow at once, and the page must know who it is by then.
    send({ type: "ready", visitor: { id: who.id, key: c.senderKey(who.id), name: who.name }, chat });
    leave = await c.hub.join(chat, (payload) => socket.readyState === socket.OPEN && socket.send(payload));
    if (closed) return void leave();
    send({ type: "history", items: transcriptItems(await c.transcript(chat, c.config.HISTORY_LIMIT), c.senderKey) });
  }

  function refuse(reason: string): void {
    send({ type: "error", code: "unauthorized", message: reason });
    close(CLOSE_UNAUTHORIZED, "unauthorized");
  }

  async function message(id: string, text: string): Promise<void> {
    if (!visitor) return void send({ type: "error", code: "unauthorized", message: "say hello first", id });
    const retryAfterSeconds = await rateLimited(visitor.id);
    if (retryAfterSeconds !== null) {
      return void send({ type: "error", code: "rate_limited", message: `at most ${c.config.RATE_PER_MINUTE} messages a minute`, id, retryAfterSeconds });
    }
    const event: WebChatEvent = { visitor, frame: { type: "message", id, text }, receivedAt: c.clock.now().toISOString() };
    const normalized = normalizeWebChatEvent(event, { channel: c.channel });
    const outcome = await c.intake.offer(c.channel, c.channel, normalized);
    if (outcome.kind === "quarantined") return void send({ type: "error", code: "bad_frame", message: "this message cannot be stored", id });
    send({ type: "ack", id });
    // The visitor's other tabs and the room's other members see it too.
    if (outcome.kind === "stored" && normalized.kind === "message") {
      await publishToChat(c.redis, c.prefix, chat, { type: "message", item: inboundItem(normalized.message, c.senderKey) }).catch(() => undefined);
    }
  }

  /** Null while the visitor is within the limit (counted across replicas), else the seconds until the next minute. */
  async function rateLimited(visitorId: string): Promise<number | null> {
    const now = c.clock.now().getTime();
    const key = `${c.prefix}:webchat:rate:${c.channel}:${visitorId}:${Math.floor(now / 60_000)}`;
    const [[, count] = []] = (await c.redis.multi().incr(key).expire(key, 61).exec()) ?? [];
    return Number(count) > c.config.RATE_PER_MINUTE ? Math.ceil((60_000 - (now % 60_000)) / 1000) : null;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
