import { Writable } from "node:stream";
import Fastify from "fastify";
import pino from "pino";
import { describe, expect, it } from "vitest";
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

  it("writes nothing for a route logging at warn", async () => {
    const { logger, lines } = capturedLogger();
    const app = Fastify(serverOptions({ logger }));
    app.get("/health", { logLevel: "warn" }, async () => ({ status: "ok" }));
    await app.inject({ method: "GET", url: "/health" });
    await app.close();
    expect(lines.filter((l) => l.req !== undefined || l.res !== undefined)).toEqual([]);
  });
});
