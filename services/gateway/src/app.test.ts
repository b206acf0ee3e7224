import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { app } from "./app";

describe("gateway app", () => {
  it("answers /api/health and reports an unready dependency with 503", async () => {
    const server = Fastify();
    await server.register(app, {
      probes: [
        { name: "postgres", check: async () => ({ ok: true }) },
        { name: "redis", check: async () => ({ ok: false, reason: "redis unreachable: ECONNREFUSED" }) },
      ],
    });
    expect((await server.inject({ url: "/api/health" })).json()).toEqual({ status: "ok" });
    const ready = await server.inject({ url: "/api/ready" });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toEqual({ status: "not_ready", checks: { postgres: "ok", redis: "redis unreachable: ECONNREFUSED" } });
    await server.close();
  });

  it("answers unknown routes with the JSON error shape", async () => {
    const server = Fastify();
    await server.register(app, { probes: [] });
    const res = await server.inject({ url: "/api/nope?x=1" });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: { code: "not_found", message: "no route GET /api/nope" } });
    await server.close();
  });

  it("hides internals of a throwing probe behind 503 with its reason", async () => {
    const server = Fastify();
    await server.register(app, { probes: [{ name: "postgres", check: async () => { throw new Error("boom"); } }] });
    const res = await server.inject({ url: "/api/ready" });
    expect(res.statusCode).toBe(503);
    await server.close();
  });
});
