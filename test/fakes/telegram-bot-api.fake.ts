import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { multipartBoundary, parseMultipartForm } from "./multipart-form.parser";
import { parseTelegramHtml } from "./telegram-html.parser";
import { readRequestBody } from "./request-body";

/** Options for {@link startFakeTelegram}. */
export interface StartFakeTelegramOptions {
  /** Username getMe reports. Default "nahida_test_bot" (the one the fixtures mention). */
  botUsername?: string;
  /** Bot user id getMe reports and sent messages carry in `from`. Default 7000000001. */
  botId?: number;
  /** When set, any other token gets Telegram's 401; otherwise every token is accepted. */
  token?: string;
  /**
   * getUpdates ignores `timeout` and answers at once, `[]` when nothing is queued, as some
   * proxies and emulators do. Default false (a long poll waits for an update or the timeout).
   */
  ignorePollTimeout?: boolean;
}

/** A file part of a multipart request. `field` is the parameter that references it (`photo`, `document`). */
export interface FakeTelegramFile {
  field: string;
  filename: string;
  /** Bytes. */
  size: number;
}

/** One authorised Bot API request, recorded in arrival order (including ones answered with a scripted failure). */
export interface FakeTelegramCall {
  /** Method name as the client spelled it. */
  method: string;
  /**
   * Query-string and body parameters merged. Form and multipart values are read as Telegram reads
   * them: JSON objects/arrays, numbers and booleans are decoded, text-like parameters stay strings.
   */
  params: Record<string, unknown>;
  at: Date;
  /** Present only for multipart requests that carried files. */
  files?: FakeTelegramFile[];
}

/** How a scripted call fails. */
export type FakeTelegramFailure =
  | { status: 429; retryAfter: number }
  /** `retryAfter` adds `parameters.retry_after`, as Telegram does with some 5xx. */
  | { status: 500 | 502; retryAfter?: number }
  | { status: 400; description: string }
  /** `{"ok":false,"error_code":status}` and nothing else, as some proxies and emulators answer. */
  | { status: number; withoutDescription: true }
  /** The socket is destroyed without an answer, as on a dropped connection. */
  | { network: true };

/** Narrows which calls a scripted failure applies to. */
export interface FailNextOptions {
  /** Only calls whose `chat_id` equals this (compared as strings). */
  chatId?: string | number;
  /** How many matching calls fail. Default 1. */
  times?: number;
}

/** An update as getUpdates returns it; the payload key (`message`, `callback_query`, ...) names its type. */
export type TelegramUpdate = { update_id: number } & Record<string, unknown>;

/** An update to queue; `update_id` is assigned when absent. */
export type TelegramUpdateInput = { update_id?: number } & Record<string, unknown>;

/** A group administrator as getChatAdministrators reports it. */
export interface ChatAdministrator {
  userId: number;
  status: "creator" | "administrator";
  firstName?: string;
}

/** A running fake Telegram Bot API server. */
export interface FakeTelegram {
  /** Pass to grammY as `client: { apiRoot }`, e.g. `http://127.0.0.1:40123` (no trailing slash). */
  readonly apiRoot: string;
  readonly botId: number;
  readonly botUsername: string;
  /** URL of the current webhook, if setWebhook set one. */
  readonly webhookUrl: string | undefined;
  /** `secret_token` given to setWebhook, if any. */
  readonly webhookSecret: string | undefined;
  /** Every recorded call, oldest first. The same array is cleared in place by {@link reset}. */
  readonly calls: readonly FakeTelegramCall[];
  /** Updates queued and not yet confirmed by a later getUpdates offset. */
  readonly pendingUpdates: readonly TelegramUpdate[];
  /** Long polls (getUpdates) held open right now. */
  readonly waitingPolls: number;
  /** Recorded calls to one method (method names compare case-insensitively, as Telegram's do). */
  callsTo(method: string): FakeTelegramCall[];
  /** sendMessage/sendPhoto/sendDocument calls, optionally only those to one chat. */
  sent(chatId?: string | number): FakeTelegramCall[];
  /** Resolves with the first `count` calls to `method` once that many arrived; rejects after `timeoutMs` (default 5000). */
  waitForCalls(method: string, count: number, timeoutMs?: number): Promise<FakeTelegramCall[]>;
  /**
   * Queues an update for getUpdates and wakes a waiting long poll. Throws if the update_id was already
   * confirmed, because Telegram would never deliver it and the test would hang instead.
   */
  pushUpdate(update: TelegramUpdateInput): TelegramUpdate;
  /** POSTs an update to the webhook URL with `X-Telegram-Bot-Api-Secret-Token`; resolves with the HTTP status. */
  deliverWebhook(update: TelegramUpdateInput): Promise<number>;
  /** What getChatAdministrators answers for a group (default: nobody). */
  setChatAdministrators(chatId: string | number, admins: ChatAdministrator[]): void;
  /** Makes the next matching call(s) to `method` fail instead of being handled. */
  failNext(method: string, failure: FakeTelegramFailure, options?: FailNextOptions): void;
  /**
   * Runs `hook` after the next matching call(s) to `method` were accepted (the message exists)
   * and before the answer goes out: the moment a client has been served but does not know it yet.
   */
  afterAccepting(method: string, hook: (call: FakeTelegramCall) => Promise<void>, options?: FailNextOptions): void;
  /**
   * Forgets calls, queued updates, scripted failures, the webhook, allowed_updates and message counters.
   * update_id keeps counting up, because a running poller still remembers its offset.
   */
  reset(): void;
  /** Drops open connections, including waiting long polls, and stops listening. */
  close(): Promise<void>;
}

const DEFAULT_BOT_ID = 7_000_000_001;
const DEFAULT_BOT_USERNAME = "nahida_test_bot";
const MAX_MESSAGE_LENGTH = 4096;
const MAX_CAPTION_LENGTH = 1024;
const MAX_BODY_BYTES = 60 * 1024 * 1024;
const SEND_METHODS = new Set(["sendmessage", "sendphoto", "senddocument"]);
/** Telegram leaves these out unless allowed_updates names them. */
const OPT_IN_UPDATE_TYPES = new Set(["chat_member", "message_reaction", "message_reaction_count"]);
/** Form values Telegram treats as text even when they look like JSON ("123", "true"). */
const STRING_PARAMS = new Set([
  "text", "caption", "parse_mode", "url", "secret_token", "ip_address", "action", "emoji",
  "photo", "document", "audio", "video", "animation", "voice", "video_note", "sticker", "thumbnail",
  "callback_query_id", "inline_query_id", "business_connection_id", "message_effect_id",
  "title", "description", "name", "short_description", "question", "file_id", "custom_emoji_id",
]);

type Reply = { status: number; body: unknown } | { network: true };

/** What tests scripted for the next calls matching a method (and a chat), each used `times` times. */
function scripted<T>() {
  let entries: { method: string; chatId: string | undefined; remaining: number; value: T }[] = [];
  return {
    add(method: string, value: T, options: FailNextOptions = {}): void {
      entries.push({
        method: method.toLowerCase(),
        chatId: options.chatId === undefined ? undefined : String(options.chatId),
        remaining: options.times ?? 1,
        value,
      });
    },
    take(method: string, params: Record<string, unknown>): T | undefined {
      const name = method.toLowerCase();
      const chatId = params.chat_id === undefined ? undefined : String(params.chat_id);
      const entry = entries.find((e) => e.method === name && (e.chatId === undefined || e.chatId === chatId));
      if (!entry) return undefined;
      entry.remaining--;
      if (entry.remaining <= 0) entries = entries.filter((e) => e !== entry);
      return entry.value;
    },
    clear(): void {
      entries = [];
    },
  };
}

interface WaitingPoll {
  res: ServerResponse;
  limit: number;
  timer: NodeJS.Timeout;
}

interface CallWaiter {
  method: string;
  count: number;
  resolve: (calls: FakeTelegramCall[]) => void;
}

/** Starts a fake Bot API on 127.0.0.1 on an ephemeral port. */
export async function startFakeTelegram(options: StartFakeTelegramOptions = {}): Promise<FakeTelegram> {
  const botId = options.botId ?? DEFAULT_BOT_ID;
  const botUsername = options.botUsername ?? DEFAULT_BOT_USERNAME;
  const botUser = { id: botId, is_bot: true, first_name: "Nahida", username: botUsername };

  const calls: FakeTelegramCall[] = [];
  const callWaiters = new Set<CallWaiter>();
  const failures = scripted<FakeTelegramFailure>();
  const hooks = scripted<(call: FakeTelegramCall) => Promise<void>>();
  let queue: TelegramUpdate[] = [];
  const administrators = new Map<string, ChatAdministrator[]>();
  let nextUpdateId = 1;
  /** Highest offset a getUpdates confirmed; updates below it are gone for good. */
  let confirmedOffset = 0;
  let allowedUpdates: Set<string> | undefined;
  let webhook: { url: string; secret: string | undefined; allowedUpdates: string[] | undefined } | undefined;
  let lastMessageIdByChat = new Map<string, number>();
  let channelIds = new Map<string, number>();
  // Telegram allows one getUpdates per bot token at a time; a newer one terminates the older with 409.
  const polls = new Map<string, WaitingPoll>();

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent && !res.destroyed) {
        writeJson(res, 500, { ok: false, error_code: 500, description: `Internal Server Error: ${String(error)}` });
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const route = /^\/bot([^/]+)\/([A-Za-z0-9_]+)$/.exec(url.pathname);
    if (!route) return writeJson(res, 404, { ok: false, error_code: 404, description: "Not Found" });
    const token = decodeURIComponent(route[1] as string);
    const method = route[2] as string;
    if (options.token !== undefined && token !== options.token) {
      return writeJson(res, 401, { ok: false, error_code: 401, description: "Unauthorized" });
    }

    let parsed: { params: Record<string, unknown>; files: FakeTelegramFile[] };
    try {
      parsed = await readParams(req, url);
    } catch (error) {
      return writeJson(res, 400, { ok: false, error_code: 400, description: `Bad Request: ${(error as Error).message}` });
    }
    const call: FakeTelegramCall = {
      method,
      params: parsed.params,
      at: new Date(),
      ...(parsed.files.length > 0 ? { files: parsed.files } : {}),
    };
    record(call);

    const failure = failures.take(method, parsed.params);
    if (failure) return sendReply(req, res, failureReply(failure));
    if (method.toLowerCase() === "getupdates") return getUpdates(token, call, res);
    const reply = dispatch(call);
    await hooks.take(method, parsed.params)?.(call);
    sendReply(req, res, reply);
  }

  function record(call: FakeTelegramCall): void {
    calls.push(call);
    for (const waiter of callWaiters) {
      const matching = callsTo(waiter.method);
      if (matching.length >= waiter.count) {
        callWaiters.delete(waiter);
        waiter.resolve(matching.slice(0, waiter.count));
      }
    }
  }

  function dispatch(call: FakeTelegramCall): Reply {
    const p = call.params;
    switch (call.method.toLowerCase()) {
      case "getme":
        return ok({
          ...botUser,
          can_join_groups: true,
          can_read_all_group_messages: false,
          supports_inline_queries: false,
          can_connect_to_business: false,
          has_main_web_app: false,
        });
      case "setwebhook": {
        const url = typeof p.url === "string" ? p.url : "";
        if (url === "") {
          webhook = undefined;
          return ok(true, "Webhook was deleted");
        }
        if (p.drop_pending_updates === true) queue = [];
        webhook = {
          url,
          secret: typeof p.secret_token === "string" ? p.secret_token : undefined,
          allowedUpdates: Array.isArray(p.allowed_updates) ? p.allowed_updates.map(String) : undefined,
        };
        for (const token of [...polls.keys()]) {
          answerPoll(token, badRequest(409, "Conflict: terminated by setWebhook request"));
        }
        return ok(true, "Webhook was set");
      }
      case "deletewebhook":
        if (p.drop_pending_updates === true) queue = [];
        if (!webhook) return ok(true, "Webhook is already deleted");
        webhook = undefined;
        return ok(true, "Webhook was deleted");
      case "getwebhookinfo":
        return ok({
          url: webhook?.url ?? "",
          has_custom_certificate: false,
          pending_update_count: queue.length,
          ...(webhook?.allowedUpdates ? { allowed_updates: webhook.allowedUpdates } : {}),
        });
      case "sendmessage":
        return sendMessage(p);
      case "sendphoto":
        return sendMedia(call, "photo");
      case "senddocument":
        return sendMedia(call, "document");
      case "getchatadministrators": {
        const chatId = String(p.chat_id ?? "");
        if (chatId === "") return badRequest(400, "Bad Request: chat_id is empty");
        if (!chatId.startsWith("-")) return badRequest(400, "Bad Request: there are no administrators in the private chat");
        return ok(
          (administrators.get(chatId) ?? []).map((a) => ({
            status: a.status,
            user: { id: a.userId, is_bot: false, first_name: a.firstName ?? "Admin" },
            ...(a.status === "administrator" ? { can_be_edited: false, is_anonymous: false } : { is_anonymous: false }),
          })),
        );
      }
      case "sendchataction":
        if (p.chat_id === undefined || p.chat_id === "") return badRequest(400, "Bad Request: chat_id is empty");
        if (typeof p.action !== "string" || p.action === "") return badRequest(400, "Bad Request: action is empty");
        return ok(true);
      default:
        return ok(true);
    }
  }

  function sendMessage(p: Record<string, unknown>): Reply {
    if (p.chat_id === undefined || p.chat_id === "") return badRequest(400, "Bad Request: chat_id is empty");
    const raw = typeof p.text === "string" ? p.text : "";
    const visible = visibleText(raw, p.parse_mode);
    if (!visible.ok) return badRequest(400, `Bad Request: can't parse entities: ${visible.error}`);
    if (visible.text.trim() === "") return badRequest(400, "Bad Request: message text is empty");
    // Measured in UTF-16 code units, the unit Telegram uses for entity offsets; stricter than code points.
    if (visible.text.length > MAX_MESSAGE_LENGTH) return badRequest(400, "Bad Request: message is too long");
    return ok({ ...messageBase(p), text: visible.text });
  }

  function sendMedia(call: FakeTelegramCall, kind: "photo" | "document"): Reply {
    const p = call.params;
    if (p.chat_id === undefined || p.chat_id === "") return badRequest(400, "Bad Request: chat_id is empty");
    const upload = call.files?.find((f) => f.field === kind);
    if (upload === undefined && (typeof p[kind] !== "string" || p[kind] === "")) {
      return badRequest(400, `Bad Request: there is no ${kind} in the request`);
    }
    let caption: string | undefined;
    if (typeof p.caption === "string" && p.caption !== "") {
      const visible = visibleText(p.caption, p.parse_mode);
      if (!visible.ok) return badRequest(400, `Bad Request: can't parse entities: ${visible.error}`);
      if (visible.text.length > MAX_CAPTION_LENGTH) return badRequest(400, "Bad Request: message caption is too long");
      caption = visible.text;
    }
    const fileRef = `fake_${kind}_${calls.length}`;
    const size = upload?.size ?? 0;
    const media =
      kind === "photo"
        ? { photo: [{ file_id: fileRef, file_unique_id: `u_${fileRef}`, file_size: size, width: 90, height: 90 }] }
        : {
            document: {
              file_id: fileRef,
              file_unique_id: `u_${fileRef}`,
              file_name: upload?.filename ?? "document.dat",
              mime_type: "application/octet-stream",
              file_size: size,
            },
          };
    return ok({ ...messageBase(p), ...media, ...(caption !== undefined ? { caption } : {}) });
  }

  function messageBase(p: Record<string, unknown>): Record<string, unknown> {
    const chat = chatFor(p.chat_id as string | number);
    const key = String(chat.id);
    const messageId = (lastMessageIdByChat.get(key) ?? 0) + 1;
    lastMessageIdByChat.set(key, messageId);
    const date = Math.floor(Date.now() / 1000);
    const threadId = toInteger(p.message_thread_id);
    const replyParameters = p.reply_parameters as { message_id?: unknown } | undefined;
    const replyToId = toInteger(replyParameters?.message_id) ?? toInteger(p.reply_to_message_id);
    return {
      message_id: messageId,
      from: botUser,
      chat,
      date,
      ...(threadId !== undefined ? { message_thread_id: threadId, is_topic_message: true } : {}),
      ...(replyToId !== undefined ? { reply_to_message: { message_id: replyToId, chat, date } } : {}),
    };
  }

  /** Chat type follows Telegram's id ranges: -100… supergroups, other negatives groups, "@name" channels. */
  function chatFor(chatId: string | number): { id: number; type: string; username?: string } {
    if (typeof chatId === "string" && chatId.startsWith("@")) {
      const username = chatId.slice(1);
      let id = channelIds.get(username);
      if (id === undefined) {
        id = -1_009_000_000_000 - channelIds.size - 1;
        channelIds.set(username, id);
      }
      return { id, type: "channel", username };
    }
    const id = Number(chatId);
    if (id > 0) return { id, type: "private" };
    return { id, type: String(chatId).startsWith("-100") ? "supergroup" : "group" };
  }

  function getUpdates(token: string, call: FakeTelegramCall, res: ServerResponse): void {
    const p = call.params;
    if (webhook) {
      return writeReply(
        res,
        badRequest(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"),
      );
    }
    answerPoll(token, badRequest(409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"));

    const offset = toInteger(p.offset);
    if (offset !== undefined && offset < 0) {
      // A negative offset keeps only the last -offset updates and forgets the rest.
      queue = queue.slice(offset);
      confirmedOffset = Math.max(confirmedOffset, queue[0]?.update_id ?? nextUpdateId);
    } else if (offset !== undefined && offset > 0) {
      queue = queue.filter((u) => u.update_id >= offset);
      confirmedOffset = Math.max(confirmedOffset, offset);
    }
    // allowed_updates sticks until a later call changes it; [] means the default set.
    if (Array.isArray(p.allowed_updates)) {
      allowedUpdates = p.allowed_updates.length > 0 ? new Set(p.allowed_updates.map(String)) : undefined;
    }
    const limit = Math.min(Math.max(toInteger(p.limit) ?? 100, 1), 100);
    const timeoutSeconds = options.ignorePollTimeout ? 0 : Math.max(toInteger(p.timeout) ?? 0, 0);

    const ready = deliverable(limit);
    if (ready.length > 0 || timeoutSeconds === 0) return writeReply(res, ok(ready));

    const timer = setTimeout(() => answerPoll(token, ok([])), timeoutSeconds * 1000);
    const poll: WaitingPoll = { res, limit, timer };
    polls.set(token, poll);
    res.once("close", () => {
      if (polls.get(token) === poll) {
        clearTimeout(timer);
        polls.delete(token);
      }
    });
  }

  /** Answers the waiting long poll for a token, if any. */
  function answerPoll(token: string, reply: Reply): void {
    const poll = polls.get(token);
    if (!poll) return;
    polls.delete(token);
    clearTimeout(poll.timer);
    writeReply(poll.res, reply);
  }

  /** Updates getUpdates may return now; those of types not allowed are dropped, as Telegram never queues them. */
  function deliverable(limit: number): TelegramUpdate[] {
    queue = queue.filter((u) => isAllowed(u));
    return queue.slice(0, limit);
  }

  function isAllowed(update: TelegramUpdate): boolean {
    const type = updateType(update);
    if (type === undefined) return true;
    return allowedUpdates ? allowedUpdates.has(type) : !OPT_IN_UPDATE_TYPES.has(type);
  }

  function wakePolls(): void {
    for (const [token, poll] of [...polls]) {
      const ready = deliverable(poll.limit);
      if (ready.length > 0) answerPoll(token, ok(ready));
    }
  }

  function withUpdateId(update: TelegramUpdateInput): TelegramUpdate {
    const updateId = update.update_id ?? nextUpdateId;
    nextUpdateId = Math.max(nextUpdateId, updateId + 1);
    return { ...update, update_id: updateId };
  }

  function pushUpdate(input: TelegramUpdateInput): TelegramUpdate {
    if (input.update_id !== undefined && input.update_id < confirmedOffset) {
      throw new Error(
        `update_id ${input.update_id} is below the confirmed offset ${confirmedOffset}; a poller would never see it. Omit update_id to get the next one.`,
      );
    }
    const update = withUpdateId(input);
    const at = queue.findIndex((u) => u.update_id > update.update_id);
    if (at === -1) queue.push(update);
    else queue.splice(at, 0, update);
    wakePolls();
    return update;
  }

  async function deliverWebhook(input: TelegramUpdateInput): Promise<number> {
    if (!webhook) throw new Error("no webhook is set; call setWebhook first");
    const update = withUpdateId(input);
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (webhook.secret !== undefined) headers["x-telegram-bot-api-secret-token"] = webhook.secret;
    const response = await fetch(webhook.url, { method: "POST", headers, body: JSON.stringify(update) });
    await response.arrayBuffer();
    return response.status;
  }

  function callsTo(method: string): FakeTelegramCall[] {
    const name = method.toLowerCase();
    return calls.filter((c) => c.method.toLowerCase() === name);
  }

  return {
    apiRoot: `http://127.0.0.1:${port}`,
    botId,
    botUsername,
    get webhookUrl() {
      return webhook?.url;
    },
    get webhookSecret() {
      return webhook?.secret;
    },
    calls,
    get waitingPolls() {
      return polls.size;
    },
    get pendingUpdates() {
      return [...queue];
    },
    callsTo,
    sent(chatId) {
      return calls.filter(
        (c) => SEND_METHODS.has(c.method.toLowerCase()) && (chatId === undefined || String(c.params.chat_id) === String(chatId)),
      );
    },
    waitForCalls(method, count, timeoutMs = 5000) {
      const already = callsTo(method);
      if (already.length >= count) return Promise.resolve(already.slice(0, count));
      return new Promise((resolve, reject) => {
        const waiter: CallWaiter = {
          method,
          count,
          resolve: (found) => {
            clearTimeout(timer);
            resolve(found);
          },
        };
        const timer = setTimeout(() => {
          callWaiters.delete(waiter);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${count} ${method} call(s); got ${callsTo(method).length}`));
        }, timeoutMs);
        callWaiters.add(waiter);
      });
    },
    pushUpdate,
    deliverWebhook,
    setChatAdministrators(chatId, admins) {
      administrators.set(String(chatId), admins);
    },
    failNext(method, failure, failOptions) {
      failures.add(method, failure, failOptions);
    },
    afterAccepting(method, hook, hookOptions) {
      hooks.add(method, hook, hookOptions);
    },
    reset() {
      calls.length = 0;
      failures.clear();
      hooks.clear();
      queue = [];
      allowedUpdates = undefined;
      webhook = undefined;
      lastMessageIdByChat = new Map();
      channelIds = new Map();
    },
    async close() {
      for (const poll of polls.values()) clearTimeout(poll.timer);
      polls.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

function ok(result: unknown, description?: string): Reply {
  return { status: 200, body: { ok: true, result, ...(description ? { description } : {}) } };
}

function badRequest(status: number, description: string): Reply {
  return { status, body: { ok: false, error_code: status, description } };
}

function failureReply(failure: FakeTelegramFailure): Reply {
  if ("network" in failure) return { network: true };
  if ("withoutDescription" in failure) return { status: failure.status, body: { ok: false, error_code: failure.status } };
  switch (failure.status) {
    case 429:
      return {
        status: 429,
        body: {
          ok: false,
          error_code: 429,
          description: `Too Many Requests: retry after ${failure.retryAfter}`,
          parameters: { retry_after: failure.retryAfter },
        },
      };
    case 500:
    case 502: {
      const description = failure.status === 500 ? "Internal Server Error" : "Bad Gateway";
      const parameters = failure.retryAfter !== undefined ? { parameters: { retry_after: failure.retryAfter } } : {};
      return { status: failure.status, body: { ok: false, error_code: failure.status, description, ...parameters } };
    }
    case 400:
      return badRequest(400, failure.description);
  }
}

function sendReply(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
  if ("network" in reply) {
    req.socket.destroy();
    return;
  }
  writeReply(res, reply);
}

function writeReply(res: ServerResponse, reply: Reply): void {
  if ("network" in reply) {
    res.socket?.destroy();
    return;
  }
  writeJson(res, reply.status, reply.body);
}

function writeJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.writableEnded || res.destroyed) return;
  const payload = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(payload) });
  res.end(payload);
}

function visibleText(text: string, parseMode: unknown): { ok: true; text: string } | { ok: false; error: string } {
  if (typeof parseMode === "string" && parseMode.toLowerCase() === "html") return parseTelegramHtml(text);
  return { ok: true, text };
}

function updateType(update: TelegramUpdate): string | undefined {
  return Object.keys(update).find((key) => key !== "update_id");
}

function toInteger(value: unknown): number | undefined {
  if (typeof value === "number" && Number.isInteger(value)) return value;
  if (typeof value === "string" && /^-?\d+$/.test(value)) return Number(value);
  return undefined;
}


/** Reads parameters from the query string and a JSON, urlencoded or multipart body, as the Bot API accepts all four. */
async function readParams(
  req: IncomingMessage,
  url: URL,
): Promise<{ params: Record<string, unknown>; files: FakeTelegramFile[] }> {
  const params: Record<string, unknown> = {};
  for (const [key, value] of url.searchParams) params[key] = decodeFormValue(key, value);
  const body = await readRequestBody(req, MAX_BODY_BYTES);
  if (body.length === 0) return { params, files: [] };

  const contentType = (req.headers["content-type"] ?? "").toLowerCase();
  if (contentType.startsWith("application/json")) {
    const json: unknown = JSON.parse(body.toString("utf8"));
    if (typeof json !== "object" || json === null || Array.isArray(json)) throw new Error("JSON body must be an object");
    return { params: { ...params, ...(json as Record<string, unknown>) }, files: [] };
  }
  if (contentType.startsWith("application/x-www-form-urlencoded")) {
    for (const [key, value] of new URLSearchParams(body.toString("utf8"))) params[key] = decodeFormValue(key, value);
    return { params, files: [] };
  }
  if (contentType.startsWith("multipart/form-data")) {
    const boundary = multipartBoundary(req.headers["content-type"] ?? "");
    if (!boundary) throw new Error("multipart body without boundary");
    const uploads: { part: string; filename: string; size: number }[] = [];
    for (const part of parseMultipartForm(body, boundary)) {
      if (part.filename !== undefined) uploads.push({ part: part.name, filename: part.filename, size: part.data.length });
      else params[part.name] = decodeFormValue(part.name, part.data.toString("utf8"));
    }
    // grammY sends `photo=attach://<id>` plus a file part named <id>; report the file under `photo`.
    const files = uploads.map(({ part, filename, size }) => {
      const field = Object.keys(params).find((key) => params[key] === `attach://${part}`) ?? part;
      return { field, filename, size };
    });
    return { params, files };
  }
  throw new Error(`unsupported content type "${contentType}"`);
}

function decodeFormValue(key: string, value: string): unknown {
  if (STRING_PARAMS.has(key)) return value;
  if (/^(-?\d+(\.\d+)?|true|false)$/.test(value) || /^[[{]/.test(value)) {
    try {
      return JSON.parse(value) as unknown;
    } catch {
      return value;
    }
  }
  return value;
}
