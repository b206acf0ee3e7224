import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import { SendGroupMessageInput, SendPrivateMessageInput, UploadGroupFileInput, UploadPrivateFileInput, GetHistoryMessagesInput } from "@saltify/milky-types";
import { readRequestBody } from "./request-body";

/** Options for {@link startFakeMilky}. */
export interface StartFakeMilkyOptions {
  /** When set, API calls need `Authorization: Bearer <it>` and event clients it as header or `access_token`; otherwise anything goes. */
  accessToken?: string;
  /** The logged-in QQ account `get_login_info` reports and events carry as `self_id`. Default 3000000001. */
  selfId?: number;
  nickname?: string;
  /** URLs every pushed event is also POSTed to, as an implementation's WebHook setting. */
  webhookUrls?: string[];
  /**
   * What an accepted send answers in `data`: `full` is `{message_seq, time}` as the current
   * protocol; `seq_only` is `{message_seq}` as older implementations; `none` leaves `data`
   * out. Default `full`.
   */
  sendAnswer?: "full" | "seq_only" | "none";
}

/** One authorised API call, in arrival order (including ones answered with a scripted failure). */
export interface FakeMilkyCall {
  api: string;
  body: Record<string, unknown>;
  at: Date;
}

/** How a scripted call fails. */
export type FakeMilkyFailure =
  /** `200 {status:"failed", retcode, message}`: the implementation refused the call. */
  | { retcode: number; message: string }
  /** An HTTP status without the JSON envelope (a proxy in front, or the implementation's 401). */
  | { status: number; retryAfterSeconds?: number }
  /** The socket is destroyed without an answer. */
  | { network: true };

export interface FakeMilkyFailOptions {
  /** Only calls whose `user_id` or `group_id` equals this. */
  peerId?: number;
  /** How many matching calls fail. Default 1. */
  times?: number;
  /** How many matching calls are answered normally before the failures begin. Default 0. */
  after?: number;
}

/** A message the fake accepted (`send_*_message`) or a file it took (`upload_*_file`). */
export interface FakeMilkySent {
  api: string;
  scene: "friend" | "group";
  peerId: number;
  /** `message` of a send, as given. */
  segments?: { type: string; data: Record<string, unknown> }[];
  /** `message_seq` answered for a send, `file_id` for an upload. */
  id: string;
  fileName?: string;
}

export interface FakeMilkyEventClients {
  websocket: number;
  sse: number;
}

/** A running fake Milky implementation (the HTTP server a QQ protocol implementation serves). */
export interface FakeMilky {
  /** `http://127.0.0.1:<port>`: `/api/<name>` and `/event` below it. */
  readonly baseUrl: string;
  readonly selfId: number;
  readonly calls: readonly FakeMilkyCall[];
  callsTo(api: string): FakeMilkyCall[];
  /** Accepted sends and uploads, optionally to one peer. */
  sent(peerId?: number): FakeMilkySent[];
  waitForSent(peerId: number, count: number, timeoutMs?: number): Promise<FakeMilkySent[]>;
  failNext(api: string, failure: FakeMilkyFailure, options?: FakeMilkyFailOptions): void;
  /** Event connections open now. */
  eventClients(): FakeMilkyEventClients;
  /** Event connections accepted so far (each reconnect counts). */
  readonly eventConnectionsAccepted: number;
  /** Event connections refused for a bad token. */
  readonly eventConnectionsRefused: number;
  /**
   * Pushes an event to every open `/event` connection and POSTs it to every WebHook URL, like
   * an implementation: nobody connected means nobody gets it. A `message_receive` is also kept
   * for `get_history_messages`. Resolves with the WebHook answers' statuses.
   */
  pushEvent(event: Record<string, unknown>): Promise<number[]>;
  /** Closes every event connection, as an implementation that restarts. */
  dropEventClients(): void;
  /** While on, every event connection is closed right after its handshake, as a server that accepts and hangs up. */
  closeEventConnectionsOnOpen(on: boolean): void;
  /**
   * The open event connections stay open and get nothing more (a half-open connection, a
   * proxy that stopped forwarding); events pushed later are kept for history only.
   */
  stallEventClients(): void;
  close(): Promise<void>;
}

const DEFAULT_SELF_ID = 3_000_000_001;
/** What the fake refuses as too long for one QQ message, in UTF-16 code units of text. */
export const FAKE_MILKY_TEXT_LIMIT = 4_500;
const MAX_BODY_BYTES = 32 * 1024 * 1024;
/** The APIs this fake implements; every other name answers 404, as for an API that does not exist. */
const APIS = new Set(["get_login_info", "get_impl_info", "send_private_message", "send_group_message", "upload_private_file", "upload_group_file", "get_history_messages"]);

type Reply = { status: number; body?: unknown; headers?: Record<string, string> } | { network: true };

/** Starts a fake Milky implementation on 127.0.0.1 on an ephemeral port. */
export async function startFakeMilky(options: StartFakeMilkyOptions = {}): Promise<FakeMilky> {
  const selfId = options.selfId ?? DEFAULT_SELF_ID;
  const calls: FakeMilkyCall[] = [];
  const sent: FakeMilkySent[] = [];
  let failures: { api: string; peerId: number | undefined; skip: number; remaining: number; failure: FakeMilkyFailure }[] = [];
  const nextSeq = new Map<string, number>();
  const history = new Map<string, Record<string, unknown>[]>();
  const sockets = new Set<WebSocket>();
  const sseClients = new Set<ServerResponse>();
  const stalled = new Set<WebSocket>();
  const stalledSse = new Set<ServerResponse>();
  const openSockets = new Set<Socket>();
  const sentWaiters = new Set<() => void>();
  let accepted = 0;
  let refused = 0;
  let hangUpOnOpen = false;

  const wss = new WebSocketServer({ noServer: true });
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent && !res.destroyed) writeJson(res, 500, { status: "failed", retcode: -500, message: String(error) });
    });
  });
  server.on("connection", (socket) => {
    openSockets.add(socket);
    socket.on("close", () => openSockets.delete(socket));
  });
  server.on("upgrade", (req, socket, head) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/event") return void socket.destroy();
    if (!eventAuthorised(req, url)) {
      refused++;
      socket.end("HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      accepted++;
      if (hangUpOnOpen) return ws.close();
      sockets.add(ws);
      ws.on("close", () => sockets.delete(ws));
      ws.on("error", () => sockets.delete(ws));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  function bearerOk(header: string | undefined): boolean {
    return options.accessToken === undefined || header === `Bearer ${options.accessToken}`;
  }

  function eventAuthorised(req: IncomingMessage, url: URL): boolean {
    return options.accessToken === undefined || bearerOk(req.headers.authorization) || url.searchParams.get("access_token") === options.accessToken;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/event" && req.method === "GET") return openSse(req, res, url);
    const route = /^\/api\/([a-z_]+)$/.exec(url.pathname);
    if (!route || req.method !== "POST") return writeJson(res, 404, undefined);
    if (!bearerOk(req.headers.authorization)) return writeJson(res, 401, undefined);
    const api = route[1]!;
    if (!APIS.has(api)) return writeJson(res, 404, undefined);
    if (!(req.headers["content-type"] ?? "").toLowerCase().startsWith("application/json")) return writeJson(res, 415, undefined);
    let body: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse((await readRequestBody(req, MAX_BODY_BYTES)).toString("utf8"));
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("the body must be a JSON object");
      body = parsed as Record<string, unknown>;
    } catch (error) {
      return writeJson(res, 200, failed(-400, `request body is not valid: ${(error as Error).message}`));
    }
    calls.push({ api, body, at: new Date() });
    const failure = takeFailure(api, body);
    const reply = failure ? failureReply(failure) : dispatch(api, body);
    if ("network" in reply) return void req.socket.destroy();
    writeJson(res, reply.status, reply.body, reply.headers);
  }

  function openSse(req: IncomingMessage, res: ServerResponse, url: URL): void {
    if (!(req.headers.accept ?? "").includes("text/event-stream")) return writeJson(res, 404, undefined);
    if (!eventAuthorised(req, url)) {
      refused++;
      return writeJson(res, 401, undefined);
    }
    accepted++;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.write(": connected\n\n");
    if (hangUpOnOpen) return void res.end();
    sseClients.add(res);
    res.on("close", () => sseClients.delete(res));
  }

  function takeFailure(api: string, body: Record<string, unknown>): FakeMilkyFailure | undefined {
    const peer = peerOf(body);
    const entry = failures.find((f) => f.api === api && (f.peerId === undefined || f.peerId === peer));
    if (!entry) return undefined;
    if (entry.skip > 0) {
      entry.skip--;
      return undefined;
    }
    entry.remaining--;
    if (entry.remaining <= 0) failures = failures.filter((f) => f !== entry);
    return entry.failure;
  }

  function dispatch(api: string, body: Record<string, unknown>): Reply {
    switch (api) {
      case "get_login_info":
        return ok({ uin: selfId, nickname: options.nickname ?? "Nahida" });
      case "get_impl_info":
        return ok({ impl_name: "nahida-fake-milky", impl_version: "0.0.0", qq_protocol_version: "0", qq_protocol_type: "linux", milky_version: "1.2" });
      case "send_private_message":
      case "send_group_message": {
        const input = (api === "send_private_message" ? SendPrivateMessageInput : SendGroupMessageInput).safeParse(body);
        if (!input.success) return { status: 200, body: failed(-400, `参数解析失败: ${input.error.issues[0]?.path.join(".")} ${input.error.issues[0]?.message}`) };
        const segments = input.data.message as FakeMilkySent["segments"] & object;
        if (segments.length === 0) return { status: 200, body: failed(-400, "消息内容为空") };
        const length = segments.reduce((n, s) => n + (s.type === "text" ? String(s.data.text).length : 0), 0);
        if (length > FAKE_MILKY_TEXT_LIMIT) return { status: 200, body: failed(-400, "消息过长") };
        const scene = api === "send_private_message" ? "friend" : "group";
        const peerId = "user_id" in input.data ? input.data.user_id : input.data.group_id;
        const seq = seqFor(scene, peerId);
        record({ api, scene, peerId, segments, id: String(seq) });
        if (options.sendAnswer === "none") return { status: 200, body: { status: "ok", retcode: 0 } };
        return ok(options.sendAnswer === "seq_only" ? { message_seq: seq } : { message_seq: seq, time: Math.floor(Date.now() / 1000) });
      }
      case "upload_private_file":
      case "upload_group_file": {
        const input = (api === "upload_private_file" ? UploadPrivateFileInput : UploadGroupFileInput).safeParse(body);
        if (!input.success) return { status: 200, body: failed(-400, `参数解析失败: ${input.error.issues[0]?.path.join(".")} ${input.error.issues[0]?.message}`) };
        if (!/^(file|https?|base64):\/\//.test(input.data.file_uri)) return { status: 200, body: failed(-400, "file_uri 格式不正确") };
        const scene = api === "upload_private_file" ? "friend" : "group";
        const peerId = "user_id" in input.data ? input.data.user_id : input.data.group_id;
        const fileId = `fake-file-${scene}-${peerId}-${seqFor(`${scene}-file`, peerId)}`;
        record({ api, scene, peerId, id: fileId, fileName: input.data.file_name });
        return ok({ file_id: fileId });
      }
      case "get_history_messages": {
        const input = GetHistoryMessagesInput.safeParse(body);
        if (!input.success) return { status: 200, body: failed(-400, "参数解析失败") };
        const kept = history.get(`${input.data.message_scene}:${input.data.peer_id}`) ?? [];
        const start = input.data.start_message_seq ?? Number.MAX_SAFE_INTEGER;
        const upToStart = kept.filter((m) => Number(m.message_seq) <= start);
        const messages = upToStart.slice(-Math.min(30, input.data.limit));
        const older = upToStart.at(-messages.length - 1);
        return ok({ messages, ...(older ? { next_message_seq: Number(older.message_seq) } : {}) });
      }
      default:
        return { status: 404 };
    }
  }

  function seqFor(scene: string, peerId: number): number {
    const key = `${scene}:${peerId}`;
    const seq = (nextSeq.get(key) ?? 1000) + 1;
    nextSeq.set(key, seq);
    return seq;
  }

  function record(entry: FakeMilkySent): void {
    sent.push(entry);
    for (const wake of [...sentWaiters]) wake();
  }

  function sentTo(peerId?: number): FakeMilkySent[] {
    return sent.filter((s) => peerId === undefined || s.peerId === peerId);
  }

  async function pushEvent(event: Record<string, unknown>): Promise<number[]> {
    const data = event.data as Record<string, unknown> | undefined;
    if (event.event_type === "message_receive" && data) {
      const key = `${String(data.message_scene)}:${String(data.peer_id)}`;
      history.set(key, [...(history.get(key) ?? []), data]);
    }
    const payload = JSON.stringify(event);
    for (const ws of sockets) ws.send(payload);
    for (const res of sseClients) res.write(`event: milky_event\ndata: ${payload}\n\n`);
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (options.accessToken !== undefined) headers.authorization = `Bearer ${options.accessToken}`;
    return Promise.all(
      (options.webhookUrls ?? []).map(async (url) => {
        const response = await fetch(url, { method: "POST", headers, body: payload });
        await response.arrayBuffer();
        return response.status;
      }),
    );
  }

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    selfId,
    calls,
    callsTo: (api) => calls.filter((c) => c.api === api),
    sent: sentTo,
    waitForSent(peerId, count, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = sentTo(peerId);
          if (found.length < count) return;
          sentWaiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          sentWaiters.delete(check);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${count} send(s) to ${peerId}; got ${sentTo(peerId).length}`));
        }, timeoutMs);
        sentWaiters.add(check);
        check();
      });
    },
    failNext(api, failure, failOptions = {}) {
      failures.push({ api, peerId: failOptions.peerId, skip: failOptions.after ?? 0, remaining: failOptions.times ?? 1, failure });
    },
    eventClients: () => ({ websocket: sockets.size, sse: sseClients.size }),
    get eventConnectionsAccepted() {
      return accepted;
    },
    get eventConnectionsRefused() {
      return refused;
    },
    pushEvent,
    dropEventClients() {
      for (const ws of sockets) ws.terminate();
      for (const res of sseClients) res.destroy();
    },
    closeEventConnectionsOnOpen(on) {
      hangUpOnOpen = on;
    },
    stallEventClients() {
      // Kept open until close(), and answering no pings.
      for (const ws of sockets) {
        stalled.add(ws);
        ws.pause();
      }
      for (const res of sseClients) stalledSse.add(res);
      sockets.clear();
      sseClients.clear();
    },
    async close() {
      for (const ws of [...sockets, ...stalled]) ws.terminate();
      for (const res of [...sseClients, ...stalledSse]) res.destroy();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of openSockets) socket.destroy();
      wss.close();
      await closed;
    },
  };
}

function peerOf(body: Record<string, unknown>): number | undefined {
  const peer = body.user_id ?? body.group_id;
  return typeof peer === "number" ? peer : undefined;
}

function ok(data: unknown): Reply {
  return { status: 200, body: { status: "ok", retcode: 0, data } };
}

function failed(retcode: number, message: string) {
  return { status: "failed", retcode, message };
}

function failureReply(failure: FakeMilkyFailure): Reply {
  if ("network" in failure) return { network: true };
  if ("retcode" in failure) return { status: 200, body: failed(failure.retcode, failure.message) };
  return { status: failure.status, ...(failure.retryAfterSeconds !== undefined ? { headers: { "retry-after": String(failure.retryAfterSeconds) } } : {}) };
}

function writeJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.writableEnded || res.destroyed) return;
  if (body === undefined) {
    res.writeHead(status, { "content-length": 0, ...headers });
    res.end();
    return;
  }
  const payload = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(payload), ...headers });
  res.end(payload);
}

