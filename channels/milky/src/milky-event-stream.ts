import type { Cluster, Redis } from "ioredis";
import { WebSocket } from "ws";
import { z } from "zod";
import { systemClock, type Clock, type Readiness } from "@nahida/contracts";
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
  redis: Redis | Cluster;
  /**
   * Where the chats seen lately and their last message_seq are kept (a hash), and, under
   * `<key>:gaps`, each chat's open gap: the seq after which its catch-up must look.
   */
  recentChatsKey: string;
  acceptEvent: AcceptMilkyEvent;
  logger: Logger;
  clock?: Clock;
  /** Chats with a message this recent are caught up after a (re)connect. Default 10 minutes. */
  backfillWindowMs?: number;
  /** Tuning; the defaults are the production values. */
  timings?: Partial<MilkyEventStreamTimings>;
}

/** What the stream waits for and how much it asks for; see README "Connect QQ through Milky". */
export interface MilkyEventStreamTimings {
  /** A connection that stayed open this long resets the reconnect back-off. Default 10 s. */
  stableAfterMs: number;
  /** SSE: a stream that sends nothing for this long is taken for dead and reopened. Default 60 s. */
  sseIdleTimeoutMs: number;
  /** WebSocket: ping interval; no pong by the next one and the connection is dead. Default 15 s. */
  pingEveryMs: number;
  /** One catch-up round gives up on the chats it has not finished after this long (they stay open). Default 2 min. */
  catchUpTimeoutMs: number;
  /** The first wait before a chat whose catch-up failed is tried again, doubling to 5 min. Default 5 s. */
  catchUpRetryMs: number;
  /** At most this many pages of `get_history_messages` (30 each) per chat and catch-up. Default 10. */
  catchUpMaxPages: number;
}

const DEFAULT_TIMINGS: MilkyEventStreamTimings = {
  stableAfterMs: 10_000,
  sseIdleTimeoutMs: 60_000,
  pingEveryMs: 15_000,
  catchUpTimeoutMs: 120_000,
  catchUpRetryMs: 5_000,
  catchUpMaxPages: 10,
};

/** Reconnect back-off: 500 ms, doubling, at most 30 s; reset only by a connection that stayed up ({@link MilkyEventStreamTimings.stableAfterMs}). */
const RECONNECT_START_MS = 500;
const RECONNECT_MAX_MS = 30_000;
const CATCH_UP_RETRY_MAX_MS = 5 * 60_000;
/** How long an event is offered again while storing fails (an outage) before the next one. */
const OUTAGE_RETRY_MS = 1_000;
/** The most chats a catch-up asks `get_history_messages` about. */
const BACKFILL_MAX_CHATS = 50;
/** Chats caught up at once, beside the live stream. */
const CATCH_UP_CONCURRENCY = 4;
/** `get_history_messages`' own limit per call. */
const HISTORY_PAGE = 30;
/**
 * Pushed events waiting to be stored (a database outage). Past it the connection is closed:
 * the implementation stops pushing into memory, the waiting events are stored first, and
 * the catch-up after the reconnect fetches what came meanwhile.
 */
const MAX_WAITING_EVENTS = 1_000;

const RecentChat = z.object({ seq: z.number().int().nonnegative(), at: z.number() });
/** The messages are read leniently one by one, like pushed events, not by the strict schema. */
const LenientHistory = z.looseObject({
  messages: z.array(z.unknown()),
  next_message_seq: z.number().int().nonnegative().nullish().catch(undefined),
});

// Clears a chat's gap only if no newer connection moved it meanwhile.
const CLEAR_GAP = `if redis.call('hget', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('hdel', KEYS[1], ARGV[1]) else return 0 end`;

/** One event connection: `signal` ends with it, `lead` with the leadership. */
type Connection = { lead: AbortSignal; signal: AbortSignal; close(): void };
type Chat = { field: string; scene: string; peerId: number };
type CatchUpResult = "done" | "cut_short" | "failed";

/**
 * Milky's event push over WebSocket or SSE (`GET {base}/event`), held by one replica per
 * account ({@link LeaderLoop}). The holder reconnects with back-off; pushed events are
 * stored one at a time in arrival order.
 *
 * The protocol has no replay: what is pushed while nobody is connected (a reconnect, a
 * takeover after the holder died) is not sent again. So when a connection opens, and before
 * any of its events is stored, every chat that had messages within the backfill window gets
 * a gap marker: its last stored message_seq. Beside the live stream, a few chats at a time,
 * the catch-up pages backwards through `get_history_messages` down to the marker and stores
 * what came after it, oldest first; the intake's dedupe keeps a message that arrives both
 * ways single. Live events move a chat's last seq on but never its marker, which is
 * cleared only by a catch-up that reached it (or gave up at the page cap, with a warning);
 * a failed one is tried again while the connection lasts, and by the next holder. A chat's
 * very first message during a gap is the one thing this cannot recover.
 */
export class MilkyEventStream {
  private readonly loop: LeaderLoop;
  private readonly clock: Clock;
  private readonly t: MilkyEventStreamTimings;
  private readonly gapsKey: string;
  /** The order events are stored in: each waits for the one before. */
  private chain: Promise<void> = Promise.resolve();
  private waiting = 0;
  /** An event connection is open (WebSocket open, or SSE stream answered). */
  private connected = false;
  private catchUps = new Set<Promise<void>>();

  constructor(private readonly o: MilkyEventStreamOptions) {
    this.clock = o.clock ?? systemClock;
    this.t = { ...DEFAULT_TIMINGS, ...o.timings };
    this.gapsKey = `${o.recentChatsKey}:gaps`;
    this.loop = new LeaderLoop({ leadership: o.leadership, role: `the Milky event connection (${o.transport})`, logger: o.logger, lead: (signal) => this.lead(signal) });
  }

  get isLeader(): boolean {
    return this.loop.isLeader;
  }

  /**
   * The holder is ready while its event connection is open; a follower while another
   * replica holds the connection's lease. Nobody holding it is not ready: no event is taken.
   */
  async readiness(): Promise<Readiness> {
    if (this.loop.isLeader) return this.connected ? { ok: true } : { ok: false, reason: "the Milky event connection is not open" };
    switch (await this.o.leadership.holder()) {
      case "other":
        return { ok: true };
      case "self":
        return { ok: false, reason: "the event connection's lease is ours but it is not open yet" };
      case "none":
        return { ok: false, reason: "no replica holds the Milky event connection" };
    }
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    await this.chain;
    await Promise.all(this.catchUps);
  }

  private now(): number {
    return this.clock.now().getTime();
  }

  private async lead(signal: AbortSignal): Promise<void> {
    let delayMs = 0;
    while (!signal.aborted) {
      const openedAt = await this.connectOnce(signal).catch((error: unknown) => {
        this.o.logger.warn({ err: (error as Error).message, transport: this.o.transport }, "milky event connection failed");
        return undefined;
      });
      // A connection that opens and closes at once must not reconnect (and catch up) every 500 ms.
      const stable = openedAt !== undefined && this.now() - openedAt >= this.t.stableAfterMs;
      await this.chain;
      if (signal.aborted) break;
      delayMs = stable ? RECONNECT_START_MS : Math.min(RECONNECT_MAX_MS, Math.max(RECONNECT_START_MS, delayMs * 2));
      this.o.logger.info({ reconnectInMs: delayMs }, "milky event connection closed; reconnecting");
      await sleep(delayMs, signal);
    }
  }

  /** One connection, until it closes, goes quiet or `signal` aborts; resolves when it had opened, if it had. */
  private connectOnce(lead: AbortSignal): Promise<number | undefined> {
    // Ends this connection only (too many events waiting, nothing heard for too long) and,
    // once it closed, its catch-up. Pushed events already taken are stored under `lead`:
    // they are offered through an outage for as long as this replica leads.
    const local = new AbortController();
    const connection = { lead, close: () => local.abort(), signal: AbortSignal.any([lead, local.signal]) };
    const run = this.o.transport === "websocket" ? this.webSocket(connection) : this.serverSentEvents(connection);
    return run.finally(() => local.abort());
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

  private webSocket(connection: Connection): Promise<number | undefined> {
    const { signal } = connection;
    return new Promise<number | undefined>((resolve, reject) => {
      let openedAt: number | undefined;
      const ws = new WebSocket(this.eventUrl("ws"), { headers: this.headers(), handshakeTimeout: 10_000 });
      let alive = true;
      const ping = setInterval(() => {
        if (!alive) return ws.terminate();
        alive = false;
        ws.ping();
      }, this.t.pingEveryMs);
      const onAbort = () => ws.terminate();
      signal.addEventListener("abort", onAbort, { once: true });
      ws.on("pong", () => (alive = true));
      ws.on("open", () => {
        openedAt = this.now();
        this.connected = true;
        this.o.logger.info({ transport: "websocket" }, "milky event connection open");
        this.afterOpen(connection);
      });
      ws.on("message", (data, isBinary) => {
        alive = true;
        if (!isBinary) this.offer(data.toString(), connection);
      });
      // The handshake's HTTP status says why it was refused; it must not carry the URL (it has the token).
      ws.on("unexpected-response", (_req, res) => {
        ws.terminate();
        reject(new Error(`the implementation refused the event connection: HTTP ${res.statusCode}${res.statusCode === 401 ? " (check MILKY_ACCESS_TOKEN)" : ""}`));
      });
      ws.on("error", (error) => {
        if (openedAt === undefined) reject(new Error(redact(error.message, this.o.accessToken)));
      });
      ws.on("close", () => {
        this.connected = false;
        clearInterval(ping);
        signal.removeEventListener("abort", onAbort);
        resolve(openedAt);
      });
    });
  }

  private async serverSentEvents(connection: Connection): Promise<number | undefined> {
    const { signal } = connection;
    const response = await fetch(this.eventUrl("http"), { headers: { accept: "text/event-stream", ...this.headers() }, signal });
    if (response.status !== 200 || !response.body) {
      await response.body?.cancel();
      throw new Error(`the implementation refused the event stream: HTTP ${response.status}${response.status === 401 ? " (check MILKY_ACCESS_TOKEN)" : ""}`);
    }
    const openedAt = this.now();
    this.connected = true;
    this.o.logger.info({ transport: "sse" }, "milky event connection open");
    this.afterOpen(connection);
    const parser = new SseParser((data) => this.offer(data, connection));
    const decoder = new TextDecoder();
    // A half-open TCP connection never ends by itself: any chunk (an event, a comment) proves the stream alive.
    let idle: NodeJS.Timeout | undefined;
    const heard = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        this.o.logger.warn({ idleMs: this.t.sseIdleTimeoutMs }, "milky event stream sent nothing for too long; reopening it");
        connection.close();
      }, this.t.sseIdleTimeoutMs);
    };
    heard();
    try {
      for await (const chunk of response.body) {
        heard();
        parser.push(decoder.decode(chunk as Uint8Array, { stream: true }));
      }
    } catch (error) {
      if (!signal.aborted) this.o.logger.warn({ err: (error as Error).message }, "milky event stream broke off");
    } finally {
      clearTimeout(idle);
      this.connected = false;
    }
    return openedAt;
  }

  /** Queues one pushed payload behind the ones before it. */
  private offer(payload: string, connection: Connection): void {
    let event: unknown;
    try {
      event = JSON.parse(payload);
    } catch {
      this.o.logger.warn({ bytes: payload.length }, "milky event is not JSON; skipped");
      return;
    }
    if (this.waiting >= MAX_WAITING_EVENTS) {
      if (!connection.signal.aborted) this.o.logger.warn({ waiting: this.waiting }, "too many milky events waiting to be stored; closing the connection until they are");
      connection.close();
      return;
    }
    this.enqueue(() => this.store(event, connection.lead));
  }

  private enqueue(task: () => Promise<void>): void {
    this.waiting++;
    this.chain = this.chain
      .then(task)
      .catch((error: unknown) => this.o.logger.error({ err: (error as Error).message }, "milky event handling failed"))
      .finally(() => this.waiting--);
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
          this.o.logger.warn({ err: (error as Error).message }, "milky event not stored before the connection was given up; the next holder's catch-up looks for it");
          return;
        }
        this.o.logger.warn({ err: (error as Error).message }, "cannot store a milky event yet; retrying");
        await sleep(OUTAGE_RETRY_MS, signal);
      }
    }
  }

  /**
   * Keeps the chat's last stored message_seq. (Read and write are two calls: a catch-up
   * storing an older message beside the live stream may rarely set it back, which only
   * makes a later catch-up ask for messages it has; the gap marker is what is never lost.)
   */
  private async remember(event: unknown): Promise<void> {
    const m = MilkyIncomingMessageCore.safeParse((event as { data?: unknown }).data);
    if (!m.success) return;
    const field = `${m.data.message_scene}:${m.data.peer_id}`;
    const known = RecentChat.safeParse(safeJson(await this.o.redis.hget(this.o.recentChatsKey, field))).data;
    if (known && known.seq >= m.data.message_seq) return;
    await this.o.redis.hset(this.o.recentChatsKey, field, JSON.stringify({ seq: m.data.message_seq, at: this.now() }));
  }

  /**
   * Marks the gaps first, in the storing order, so no event of the new connection moves a
   * chat's seq before its marker is set; the catch-up itself runs beside the live stream.
   */
  private afterOpen({ signal }: Connection): void {
    this.enqueue(async () => {
      const chats = await this.markGaps().catch((error: unknown) => {
        this.o.logger.warn({ err: (error as Error).message }, "milky catch-up cannot read the recent chats; the next connection tries again");
        return [];
      });
      if (chats.length === 0 || signal.aborted) return;
      const run = this.catchUp(chats, signal).catch((error: unknown) => this.o.logger.error({ err: (error as Error).message }, "milky catch-up failed"));
      this.catchUps.add(run);
      void run.finally(() => this.catchUps.delete(run));
    });
  }

  /** Sets each recent chat's gap marker to its last stored seq, unless it has an older one still open. */
  private async markGaps(): Promise<Chat[]> {
    const windowMs = this.o.backfillWindowMs ?? 10 * 60_000;
    const now = this.now();
    const all = await this.o.redis.hgetall(this.o.recentChatsKey);
    const recent = Object.entries(all)
      .flatMap(([field, value]) => {
        const chat = RecentChat.safeParse(safeJson(value)).data;
        const [scene, peer] = field.split(":");
        return chat && scene && peer && now - chat.at < windowMs ? [{ field, scene, peerId: Number(peer), ...chat }] : [];
      })
      .sort((a, b) => b.at - a.at)
      .slice(0, BACKFILL_MAX_CHATS);
    if (recent.length === 0) return [];
    const marking = this.o.redis.multi();
    for (const chat of recent) marking.hsetnx(this.gapsKey, chat.field, String(chat.seq));
    await marking.exec();
    return recent.map(({ field, scene, peerId }) => ({ field, scene, peerId }));
  }

  /** Rounds over the chats whose gap is open, until none fails or the connection ends. */
  private async catchUp(chats: Chat[], signal: AbortSignal): Promise<void> {
    let open = chats;
    for (let retryMs = this.t.catchUpRetryMs; open.length > 0 && !signal.aborted; retryMs = Math.min(CATCH_UP_RETRY_MAX_MS, retryMs * 2)) {
      const round = AbortSignal.any([signal, AbortSignal.timeout(this.t.catchUpTimeoutMs)]);
      const results = new Map<Chat, CatchUpResult>();
      const queue = [...open];
      const worker = async () => {
        for (let chat = queue.shift(); chat && !round.aborted; chat = queue.shift()) results.set(chat, await this.catchUpChat(chat, round));
      };
      await Promise.all(Array.from({ length: Math.min(CATCH_UP_CONCURRENCY, queue.length) }, worker));
      open = open.filter((chat) => (results.get(chat) ?? "failed") === "failed");
      if (open.length === 0 || signal.aborted) return;
      this.o.logger.warn({ chats: open.length, retryInMs: retryMs }, "milky catch-up did not finish for some chats; trying them again");
      await sleep(retryMs, signal);
    }
  }

  /** Stores what a chat received after its gap marker, oldest first. */
  private async catchUpChat(chat: Chat, signal: AbortSignal): Promise<CatchUpResult> {
    let marker: string | null;
    let after = 0;
    const found = new Map<number, unknown>();
    let start: number | undefined;
    let result: CatchUpResult = "done";
    try {
      marker = await this.o.redis.hget(this.gapsKey, chat.field);
      if (marker === null) return "done";
      after = Number(marker);
      for (let page = 0; ; page++) {
        if (page === this.t.catchUpMaxPages) {
          result = "cut_short";
          break;
        }
        const history = await this.o.api.call(
          "get_history_messages",
          { message_scene: chat.scene, peer_id: chat.peerId, limit: HISTORY_PAGE, ...(start !== undefined ? { start_message_seq: start } : {}) },
          LenientHistory,
          signal,
        );
        let oldest = Number.POSITIVE_INFINITY;
        for (const message of history.messages) {
          const seq = MilkyIncomingMessageCore.safeParse(message).data?.message_seq;
          if (seq === undefined) continue;
          oldest = Math.min(oldest, seq);
          if (seq > after) found.set(seq, message);
        }
        const next = history.next_message_seq ?? (Number.isFinite(oldest) ? oldest - 1 : undefined);
        // Reached the marker, the start of the history, or an answer that does not page on.
        if (oldest <= after + 1 || next === undefined || next <= after || (start !== undefined && next >= start)) break;
        start = next;
      }
    } catch (error) {
      this.o.logger.warn({ err: (error as Error).message, scene: chat.scene, peer_id: chat.peerId }, "milky catch-up failed for a chat; its gap stays open");
      return "failed";
    }
    if (result === "cut_short") {
      const oldestFound = Math.min(...found.keys());
      this.o.logger.warn(
        { scene: chat.scene, peer_id: chat.peerId, after, oldestFound, pages: this.t.catchUpMaxPages },
        "milky catch-up reached its page cap: messages between the gap's start and the oldest page fetched are not recovered",
      );
    }
    const messages = [...found.entries()].sort(([a], [b]) => a - b);
    for (const [, message] of messages) {
      if (signal.aborted) return "failed";
      // The message's own time, not now: the same message recovered again is the same event (a quarantined one is kept once).
      const time = typeof (message as { time?: unknown }).time === "number" ? (message as { time: number }).time : Math.floor(this.now() / 1000);
      await this.store({ time, self_id: this.o.selfId, event_type: "message_receive", data: message }, signal);
    }
    if (signal.aborted) return "failed";
    try {
      await this.o.redis.eval(CLEAR_GAP, 1, this.gapsKey, chat.field, marker);
    } catch (error) {
      this.o.logger.warn({ err: (error as Error).message, scene: chat.scene, peer_id: chat.peerId }, "milky catch-up cannot close a chat's gap yet");
      return "failed";
    }
    if (messages.length > 0) this.o.logger.info({ offered: messages.length, scene: chat.scene, peer_id: chat.peerId }, "milky catch-up offered messages pushed while disconnected");
    return result;
  }
}

function safeJson(text: string | null): unknown {
  if (text === null) return undefined;
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
