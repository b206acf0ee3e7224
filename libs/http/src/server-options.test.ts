import { request as httpRequest } from "node:http";
import { Writable } from "node:stream";
import Fastify from "fastify";
import pino from "pino";
import { describe, expect, it, vi } from "vitest";
import { serverOptions } from "./server-options";

function capturedLogger(level = "info") {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}

describe("AccessLog: one line per request", () => {
  it("writes the request and its answer in one line when it ends", async () => {
    const { logger, lines } = capturedLogger();
    const app = Fastify(serverOptions({ logger }));
    app.post("/x", async (_request, reply) => reply.status(202).send({ ok: true }));
    const res = await app.inject({ method: "POST", url: "/x?a=1", payload: { a: 1 } });
    expect(res.statusCode).toBe(202);
    await app.close();
    const access = lines.filter((l) => l.req !== undefined || l.res !== undefined);
    expect(access).toHaveLength(1);
    expect(access[0]).toMatchObject({ level: 30, msg: "request completed", req: { method: "POST", url: "/x?a=1" }, res: { statusCode: 202 } });
    expect(access[0]!.responseTime).toEqual(expect.any(Number));
  });

  it("keeps the start of a request at debug, and a failed request's status", async () => {
    const { logger, lines } = capturedLogger("debug");
    const app = Fastify(serverOptions({ logger }));
    app.get("/boom", async () => {
      throw new Error("boom");
    });
    await app.inject({ method: "GET", url: "/boom" });
    await app.close();
    expect(lines.filter((l) => l.msg === "incoming request")).toMatchObject([{ level: 20, req: { method: "GET", url: "/boom" } }]);
    expect(lines.filter((l) => l.msg === "request completed")).toMatchObject([{ level: 30, req: { url: "/boom" }, res: { statusCode: 500 } }]);
    // The error itself is Fastify's error handler's line, as before.
    expect(lines.filter((l) => l.msg === "boom")).toMatchObject([{ level: 50, err: { message: "boom" } }]);
  });

  it("writes an upgrade's start at info: it never completes here", async () => {
    const { logger, lines } = capturedLogger();
    const app = Fastify(serverOptions({ logger }));
    app.get("/ws", async () => ({ ok: true }));
    await app.inject({ method: "GET", url: "/ws", headers: { upgrade: "websocket", connection: "upgrade" } });
    await app.close();
    expect(lines.filter((l) => l.msg === "incoming request")).toMatchObject([{ level: 30, req: { method: "GET", url: "/ws" } }]);
  });

  it("writes a line at info for a request whose client goes away before the answer", async () => {
    const { logger, lines } = capturedLogger();
    const app = Fastify(serverOptions({ logger }));
    let arrived!: () => void;
    const handlerStarted = new Promise<void>((resolve) => (arrived = resolve));
    let release!: () => void;
    app.get("/slow", async () => {
      arrived();
      await new Promise<void>((resolve) => (release = resolve));
      return { ok: true };
    });
    const address = await app.listen({ host: "127.0.0.1", port: 0 });
    const client = httpRequest(`${address}/slow`);
    client.on("error", () => undefined);
    client.end();
    await handlerStarted;
    client.destroy();
    await vi.waitFor(() => expect(lines.some((l) => l.msg === "request closed before its answer")).toBe(true));
    release();
    await app.close();
    expect(lines.filter((l) => l.msg === "request closed before its answer")).toMatchObject([{ level: 30, req: { method: "GET", url: "/slow" } }]);
    expect(lines.filter((l) => l.msg === "request completed")).toEqual([]);
  });

  it("writes nothing for a route logging at warn", async () => {
    const { logger, lines } = capturedLogger();
    const app = Fastify(serverOptions({ logger }));
    app.get("/health", { logLevel: "warn" }, async () => ({ status: "ok" }));
    await app.inject({ method: "GET", url: "/health" });
    await app.close();
    expect(lines.filter((l) => l.req !== undefined || l.res !== undefined)).toEqual([]);
  });
});
