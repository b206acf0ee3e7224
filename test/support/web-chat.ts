import { SignJWT } from "jose";
import { WebSocket } from "ws";
import type { ClientFrame, ServerFrame } from "@nahida/channel-web";
import type { FakeOpenAI, FakeOpenAIRequest } from "../fakes/openai.fake";
import { waitFor } from "./infra";

/** The web chat's secret in tests. */
export const TEST_WEB_SECRET = "test-web-chat-secret-0123456789abcdef";

/** A visitor token as the operator's site would issue it (HS256, an hour). */
export function visitorToken(sub: string, claims: { name?: string; room?: string } = {}, secret = TEST_WEB_SECRET): Promise<string> {
  return new SignJWT({ ...claims })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(secret));
}

/** The text of the newest user message of a request, without its envelope line. */
export function lastUserText(request: FakeOpenAIRequest): string {
  const user = request.body.messages.filter((m) => m.role === "user").at(-1);
  const content = typeof user?.content === "string" ? user.content : JSON.stringify(user?.content ?? "");
  return content.split("\n").slice(1).join("\n");
}

/** The fake model answers every message with `echo: <its text>`. */
export function echoModel(openai: FakeOpenAI): void {
  openai.onRequest((request) => ({ content: `echo: ${lastUserText(request)}` }));
}

/** A page's socket without a browser: frames in arrival order, and waits on them. */
export class ChatSocket {
  readonly frames: ServerFrame[] = [];
  closed: { code: number; reason: string } | null = null;

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => this.frames.push(JSON.parse(String(data)) as ServerFrame));
    ws.on("close", (code, reason) => (this.closed = { code, reason: String(reason) }));
  }

  /** Opens `<base><path>/ws`; rejects with the HTTP status when the upgrade is refused. */
  static open(base: string, options: { path?: string; origin?: string; cookie?: string } = {}): Promise<ChatSocket> {
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}${options.path ?? "/chat"}/ws`, {
      headers: { origin: options.origin ?? base, ...(options.cookie ? { cookie: options.cookie } : {}) },
    });
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(new ChatSocket(ws)));
      ws.once("unexpected-response", (_request, response) => reject(new Error(`upgrade refused: ${response.statusCode}`)));
      ws.once("error", reject);
    });
  }

  /** Opens a socket and says hello with a token for `visitor`; resolves once it is ready. */
  static async visitor(base: string, visitor: string, claims: { name?: string; room?: string } = {}): Promise<ChatSocket> {
    const socket = await ChatSocket.open(base);
    socket.send({ type: "hello", token: await visitorToken(visitor, claims) });
    await socket.next((f) => f.type === "history");
    return socket;
  }

  send(frame: ClientFrame | string | Buffer): void {
    this.ws.send(typeof frame === "string" || Buffer.isBuffer(frame) ? frame : JSON.stringify(frame));
  }

  /** The first frame that matches, waiting up to `timeoutMs` for it. */
  async next<T extends ServerFrame>(match: (frame: ServerFrame) => frame is T, timeoutMs?: number): Promise<T>;
  async next(match: (frame: ServerFrame) => boolean, timeoutMs?: number): Promise<ServerFrame>;
  async next(match: (frame: ServerFrame) => boolean, timeoutMs = 10_000): Promise<ServerFrame> {
    return waitFor(async () => this.frames.find(match), timeoutMs, "a matching frame", 10);
  }

  async closedWith(timeoutMs = 10_000): Promise<{ code: number; reason: string }> {
    return waitFor(async () => this.closed, timeoutMs, "the socket to close", 10);
  }

  close(): void {
    this.ws.close();
  }
}
