import { describe, expect, it } from "vitest";
import { Prisma, type Tx } from "@nahida/db";
import { defineEffect, type EffectEnv } from "./effects/effect";
import { UnitOfWork } from "./unit-of-work";

const written: string[] = [];
const tx = {} as Tx;
const env = { runId: "r", now: new Date(0) } as EffectEnv;

const late = defineEffect<string>({
  name: "late",
  stage: 70,
  async write(values) {
    written.push(`late:${values.join(",")}`);
    return { wake: values.map((v) => `lane:${v}`) };
  },
  parts: (values) => ({ parts: values.map((v) => () => Prisma.sql`SELECT ${v}`), after: { wake: [...values] } }),
});
const early = defineEffect<string>({
  name: "early",
  stage: 10,
  async write(values) {
    written.push(`early:${values.join(",")}`);
  },
});
const partless = defineEffect<string>({ name: "partless", stage: 70, write: async () => undefined });

describe("UnitOfWork", () => {
  it("writes kinds in stage order, each kind's values together and in order", async () => {
    written.length = 0;
    const uow = new UnitOfWork();
    uow.emit(late, "a");
    uow.emit(early, "x");
    uow.emit(late, "b");
    expect(await uow.commit(tx, env)).toEqual({ deliveryIds: [], wake: ["lane:a", "lane:b"], stopTasks: [], endedTasks: [] });
    expect(written).toEqual(["early:x", "late:a,b"]);
  });

  it("offers one statement only when every kind emitted has parts", () => {
    const uow = new UnitOfWork();
    uow.emit(late, "a");
    expect(uow.parts(env)).toMatchObject({ parts: [expect.any(Function)], after: { wake: ["a"] } });
    uow.emit(partless, "p");
    expect(uow.parts(env)).toBeNull();
    expect(new UnitOfWork().parts(env)).toEqual({ parts: [], after: { deliveryIds: [], wake: [], stopTasks: [], endedTasks: [] } });
  });

  it("holds effects until kept, discards on request, and refuses two kinds of one name", async () => {
    const uow = new UnitOfWork();
    const held = uow.hold();
    held.emit(late, "held");
    expect(uow.values(late)).toEqual([]);
    held.keep();
    uow.emit(late, "more");
    uow.discard(late, (v) => v === "held");
    expect(uow.values(late)).toEqual(["more"]);
    uow.emit(defineEffect<string>({ name: "late", stage: 1, write: async () => undefined }), "clash");
    await expect(uow.commit(tx, env)).rejects.toThrow("two effect kinds are named late");
  });
});
