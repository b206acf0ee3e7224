import type { Socket } from "node:net";
import { LogController, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from "fastify";
import type { ErrorCode } from "@nahida/contracts";

/**
 * A JSON error answer written straight to a socket Fastify never made a request of, as
 * Node's own handler does: only when no response has started on it (a keep-alive socket may
 * be mid-response), and the socket is destroyed after, never left half open.
 */
function socketAnswer(socket: Socket, status: number, reason: string, code: ErrorCode, message: string): void {
  const started = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (!socket.writable || started) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({ error: { code, message } });
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`, () => socket.destroy());
}

/**
 * One access line per request, written when it ends, where Fastify writes two (`incoming
 * request` at the start, `request completed` at the end): each line is a serialization, a
 * redaction pass and a write, paid by every webhook and every `POST /api/send` (issue 26).
 * The one line carries what both did (method, URL, remote address, status, time), and the
 * start stays at `debug`. A request that never completes still gets its line at `info`: an
 * upgrade (the web chat's WebSocket, handed over and never answered here) at its start, and
 * a request whose client went away before the answer when its connection closes.
 */
export class AccessLog extends LogController {
  override incomingRequest(request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    if (request.headers.upgrade !== undefined) {
      request.log.info({ req: request }, "incoming request");
      return;
    }
    request.log.debug({ req: request }, "incoming request");
    reply.raw.once("close", () => {
      if (!reply.raw.writableEnded) reply.log.info({ req: request, responseTime: reply.elapsedTime }, "request closed before its answer");
    });
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, "request errored");
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, "request completed");
  }
}

/**
 * What every Nahida HTTP server is built with, so that every error it answers has the
 * documented shape (`{error: {code, message}}`), Fastify's and Node's own included: a URL
 * Fastify cannot decode (`frameworkErrors`), and a request Node's parser refuses before
 * Fastify sees it (`clientErrorHandler`: headers too large → 431, anything else → 400).
 */
export function serverOptions(o: {
  logger: FastifyServerOptions["loggerInstance"];
  bodyLimitBytes?: number;
  /** Which proxies' `X-Forwarded-*` headers to believe (Fastify's `trustProxy`): the client's address, scheme and host. */
  trustProxy?: boolean | string;
}): FastifyServerOptions {
  return {
    loggerInstance: o.logger,
    logController: new AccessLog(),
    ...(o.trustProxy !== undefined ? { trustProxy: o.trustProxy } : {}),
    ...(o.bodyLimitBytes !== undefined ? { bodyLimit: o.bodyLimitBytes } : {}),
    frameworkErrors: (error, _request, reply) => {
      const status = typeof (error as { statusCode?: unknown }).statusCode === "number" ? (error as { statusCode: number }).statusCode : 400;
      const body = { error: { code: status >= 500 ? "internal" : "bad_request", message: status >= 500 ? "internal error" : error.message } };
      void (reply as unknown as { status(code: number): { send(body: unknown): unknown } }).status(status).send(body);
    },
    clientErrorHandler: (error: Error & { code?: string }, socket: Socket) => {
      if (error.code === "ECONNRESET" || !socket.writable) {
        socket.destroy();
        return;
      }
      if (error.code === "HPE_HEADER_OVERFLOW") return socketAnswer(socket, 431, "Request Header Fields Too Large", "bad_request", "the request's headers are too large");
      if (error.code === "ERR_HTTP_REQUEST_TIMEOUT") return socketAnswer(socket, 408, "Request Timeout", "bad_request", "the request took too long to arrive");
      socketAnswer(socket, 400, "Bad Request", "bad_request", "the request is malformed");
    },
  };
}
