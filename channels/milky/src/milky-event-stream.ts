import type { Redis } from "ioredis";
import { WebSocket } from "ws";
import { z } from "zod";
import type { Logger } from "@nahida/observability";
import { LeaderLoop, sleep, type RedisLeadership } from "@nahida/queue";
import type { MilkyApiClient } from "./milky-api.client";
import { logMilkyEventOutcome, type AcceptMilkyEvent } from "./milky-event.handler";
import { MilkyIncomingMessageCore } from "./milky-wire";

export interface MilkyEventStreamOptions {
  baseUrl: string;
  accessToken?: string;
  transport: "websocket" | "sse";
  selfId: number;
  /** One `/event` connection per account across replicas. */
  leadership: RedisLeadership;
  api: MilkyApiClient;
  redis: Redis;
  /** Where the chats seen lately and their last message_seq are kept, for the backfill after a (re)connect. */
  recentChatsKey: string;
  acceptEvent: AcceptMilkyEvent;
  logger: Logger;
  /** Chats with a message this recent are backfilled after a (re)connect. Default 10 minutes. */
  backfillWindowMs?: number;
}

/** Reconnect back-off: 500 ms, doubling, at most 30 s; reset by a connection that opened. */
const RECONNECT_START_MS = 500;
const RECONNECT_MAX_MS = 30_000;
/** A connection that answers no ping for this long is dead (a half-open TCP connection never closes by itself). */
const PING_EVERY_MS = 15_000;
/** How long an event is offered again while storing fails (an outage) before the next one. */
const OUTAGE_RETRY_MS = 1_000;
/** The most chats a backfill asks `get_history_messages` about (one call each). */
const BACKFILL_MAX_CHATS = 50;
/** `get_history_messages`' own limit per call. */
const BACKFILL_MESSAGES = 30;

const RecentChat = z.object({ seq: z.number().int().nonnegative(), at: z.number() });

/**
 * Milky's event push over WebSocket or SSE (`GET {base}/event`), held by one replica per
 * account ({@link LeaderLoop}). The holder reconnects with back-off; events are stored one
 * at a time in arrival order, each before the next is read.
 *
 * The protocol has no replay: what is pushed while nobody is connected (a reconnect, a
 * takeover after the holder died) is not sent again. So after every (re)connect the holder
 * asks `get_history_messages` for the chats that had messages within the backfill window
 * and offers what came after the last stored message_seq; the intake's dedupe keeps a
 * message that arrives both ways single. A chat's very first message during a gap is the
 * one thing this cannot recover.
 */
export class MilkyEventStream {
  private readonly loop: LeaderLoop;
  /** The order events are stored in: each waits for the one before. */
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly o: MilkyEventStreamOptions) {
    this.loop = new LeaderLoop({ leadership: o.leadership, role: `the Milky event connection (${o.transport})`, logger: o.logger, lead: (signal) => this.lead(signal) });
  }

  get isLeader(): boolean {
    return this.loop.isLeader;
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    await this.chain;
  }

  private async lead(signal: AbortSignal): Promise<void> {
    let delayMs = RECONNECT_START_MS;
    while (!signal.aborted) {
      const opened = await this.connectOnce(signal).catch((error: unknown) => {
        this.o.logger.warn({ err: (error as Error).message, transport: this.o.transport }, "milky event connection failed");
        return false;
      });
      await this.chain;
      if (signal.aborted) break;
      delayMs = opened ? RECONNECT_START_MS : Math.min(RECONNECT_MAX_MS, delayMs * 2);
      this.o.logger.info({ reconnectInMs: delayMs }, "milky event connection closed; reconnecting");
      await sleep(delayMs, signal);
    }
  }

  /** One connection, until it closes or `signal` aborts; resolves whether it had opened. */
  private connectOnce(signal: AbortSignal): Promise<boolean> {
    return this.o.transport === "websocket" ? this.webSocket(signal) : this.serverSentEvents(signal);
  }

  private eventUrl(scheme: "ws" | "http"): string {
    const url = new URL(`${this.o.baseUrl.replace(/\/+$/, "")}/event`);
    if (scheme === "ws") url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    // Implementations check the header or, like the first versions of the protocol, the query.
    if (this.o.accessToken) url.searchParams.set("access_token", this.o.accessToken);
    return url.toString();
  }

  private headers(): Record<string, string> {
    return this.o.accessToken ? { authorization: `Bearer ${this.o.accessToken}` } : {};
  }

  private webSocket(signal: AbortSignal): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      let opened = false;
      const ws = new WebSocket(this.eventUrl("ws"), { headers: this.headers(), handshakeTimeout: 10_000 });
      let alive = true;
      const ping = setInterval(() => {
        if (!alive) return ws.terminate();
        alive = false;
        ws.ping();
      }, PING_EVERY_MS);
      const onAbort = () => ws.terminate();
      signal.addEventListener("abort", onAbort, { once: true });
      ws.on("pong", () => (alive = true));
      ws.on("open", () => {
        opened = true;
        this.o.logger.info({ transport: "websocket" }, "milky event connection open");
        this.afterOpen(signal);
      });
      ws.on("message", (data, isBinary) => {
        alive = true;
        if (!isBinary) this.offer(data.toString(), signal);
      });
      // The handshake's HTTP status says why it was refused; it must not carry the URL (it has the token).
      ws.on("unexpected-response", (_req, res) => {
        ws.terminate();
        reject(new Error(`the implementation refused the event connection: HTTP ${res.statusCode}${res.statusCode === 401 ? " (check MILKY_ACCESS_TOKEN)" : ""}`));
      });
      ws.on("error", (error) => {
        if (!opened) reject(new Error(redact(error.message, this.o.accessToken)));
      });
      ws.on("close", () => {
        clearInterval(ping);
        signal.removeEventListener("abort", onAbort);
        resolve(opened);
      });
    });
  }

  private async serverSentEvents(signal: AbortSignal): Promise<boolean> {
    const response = await fetch(this.eventUrl("http"), { headers: { accept: "text/event-stream", ...this.headers() }, signal });
    if (response.status !== 200 || !response.body) {
      await response.body?.cancel();
      throw new Error(`the implementation refused the event stream: HTTP ${response.status}${response.status === 401 ? " (check MILKY_ACCESS_TOKEN)" : ""}`);
    }
    this.o.logger.info({ transport: "sse" }, "milky event connection open");
    this.afterOpen(signal);
    const parser = new SseParser((data) => this.offer(data, signal));
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body) parser.push(decoder.decode(chunk as Uint8Array, { stream: true }));
    } catch (error) {
      if (!signal.aborted) this.o.logger.warn({ err: (error as Error).message }, "milky event stream broke off");
    }
    return true;
  }

  /** Queues one pushed payload behind the ones before it. */
  private offer(payload: string, signal: AbortSignal): void {
    let event: unknown;
    try {
      event = JSON.parse(payload);
    } catch {
      this.o.logger.warn({ bytes: payload.length }, "milky event is not JSON; skipped");
      return;
    }
    this.enqueue(() => this.store(event, signal));
  }

  private enqueue(task: () => Promise<void>): void {
    this.chain = this.chain.then(task).catch((error: unknown) => this.o.logger.error({ err: (error as Error).message }, "milky event handling failed"));
  }

  /** Stores one event, offering it again through an outage for as long as this replica holds the connection. */
  private async store(event: unknown, signal: AbortSignal): Promise<void> {
    for (;;) {
      try {
        const outcome = await this.o.acceptEvent(event);
        logMilkyEventOutcome(this.o.logger, outcome);
        if (outcome.kind === "stored" || outcome.kind === "duplicate") await this.remember(event);
        return;
      } catch (error) {
        if (signal.aborted) {
          this.o.logger.warn({ err: (error as Error).message }, "milky event not stored before the connection was given up; the next holder's backfill looks for it");
          return;
        }
        this.o.logger.warn({ err: (error as Error).message }, "cannot store a milky event yet; retrying");
        await sleep(OUTAGE_RETRY_MS, signal);
      }
    }
  }

  /** Keeps the chat's last stored message_seq for the backfill. */
  private async remember(event: unknown): Promise<void> {
    const m = MilkyIncomingMessageCore.safeParse((event as { data?: unknown }).data);
    if (!m.success) return;
    const field = `${m.data.message_scene}:${m.data.peer_id}`;
    const known = RecentChat.safeParse(JSON.parse((await this.o.redis.hget(this.o.recentChatsKey, field)) ?? "null")).data;
    if (known && known.seq >= m.data.message_seq) return;
    await this.o.redis.hset(this.o.recentChatsKey, field, JSON.stringify({ seq: m.data.message_seq, at: Date.now() }));
  }

  /** Runs before any event of the new connection is stored. */
  private afterOpen(signal: AbortSignal): void {
    this.enqueue(() => this.backfill(signal));
  }

  private async backfill(signal: AbortSignal): Promise<void> {
    const windowMs = this.o.backfillWindowMs ?? 10 * 60_000;
    const all = await this.o.redis.hgetall(this.o.recentChatsKey);
    const recent = Object.entries(all)
      .flatMap(([field, value]) => {
        const chat = RecentChat.safeParse(safeJson(value)).data;
        const [scene, peer] = field.split(":");
        return chat && scene && peer && Date.now() - chat.at < windowMs ? [{ scene, peerId: Number(peer), ...chat }] : [];
      })
      .sort((a, b) => b.at - a.at)
      .slice(0, BACKFILL_MAX_CHATS);
    let offered = 0;
    for (const chat of recent) {
      if (signal.aborted) return;
      let messages: unknown[];
      try {
        const history = await this.o.api.call("get_history_messages", { message_scene: chat.scene, peer_id: chat.peerId, limit: BACKFILL_MESSAGES }, LenientHistory, signal);
        messages = history.messages;
      } catch (error) {
        this.o.logger.warn({ err: (error as Error).message, scene: chat.scene, peer_id: chat.peerId }, "milky backfill failed for a chat");
        continue;
      }
      for (const message of messages) {
        const seq = MilkyIncomingMessageCore.safeParse(message).data?.message_seq;
        if (seq === undefined || seq <= chat.seq) continue;
        offered++;
        await this.store({ time: Math.floor(Date.now() / 1000), self_id: this.o.selfId, event_type: "message_receive", data: message }, signal);
      }
    }
    if (offered > 0) this.o.logger.info({ offered, chats: recent.length }, "milky backfill offered messages pushed while disconnected");
  }
}

/** The messages are read leniently one by one, like pushed events, not by the strict schema. */
const LenientHistory = z.looseObject({ messages: z.array(z.unknown()) });

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function redact(text: string, secret: string | undefined): string {
  return secret ? text.replaceAll(secret, "[token]").replaceAll(encodeURIComponent(secret), "[token]") : text;
}

/**
 * Server-sent events as the WHATWG spec reads them, reduced to what Milky sends: `data:`
 * lines joined by newlines form one event at a blank line; comments, `event:`, `id:` and
 * `retry:` are read past.
 */
export class SseParser {
  private buffer = "";
  private data: string[] = [];

  constructor(private readonly onData: (data: string) => void) {}

  push(text: string): void {
    this.buffer += text;
    for (let end = this.lineEnd(); end >= 0; end = this.lineEnd()) {
      const line = this.buffer.slice(0, end);
      const next = this.buffer[end] === "\r" && this.buffer[end + 1] === "\n" ? end + 2 : end + 1;
      this.buffer = this.buffer.slice(next);
      this.line(line);
    }
  }

  private lineEnd(): number {
    const cr = this.buffer.indexOf("\r");
    const lf = this.buffer.indexOf("\n");
    // A lone CR at the very end may be the first half of CRLF: wait for the next chunk.
    if (cr >= 0 && (lf < 0 || cr < lf)) return cr === this.buffer.length - 1 ? -1 : cr;
    return lf;
  }

  private line(line: string): void {
    if (line === "") {
      if (this.data.length > 0) this.onData(this.data.join("\n"));
      this.data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "data") this.data.push(value);
  }
}
