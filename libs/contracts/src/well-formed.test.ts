import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, jsonTextDepth, storableJson, storableJsonCut, wellFormed } from "./well-formed";

/** `[{"a":[{"a":…` nested `depth` levels, as a hostile webhook sends it. */
const nested = (depth: number) => `${'[{"a":'.repeat(depth / 2)}1${"}]".repeat(depth / 2)}`;

describe("jsonTextDepth", () => {
  it("counts nesting without parsing, skipping brackets inside strings and escapes", () => {
    expect(jsonTextDepth('{"a":[1,{"b":2}]}')).toBe(3);
    expect(jsonTextDepth('{"a":"[[[[{{{{\\"]]]"}')).toBe(1);
    expect(jsonTextDepth("42")).toBe(0);
  });

  it("stops counting just past the limit, however deep the text goes", () => {
    expect(jsonTextDepth(nested(40_000), MAX_JSON_DEPTH)).toBe(MAX_JSON_DEPTH + 1);
    expect(jsonTextDepth(nested(64), MAX_JSON_DEPTH)).toBe(64);
  });
});

describe("storableJson", () => {
  it("cleans keys as well as values: NUL dropped, lone surrogates replaced", () => {
    const value = { ["k\ud800ey\u0000"]: ["v\udc00", { x: "a\u0000b" }], n: 1, t: true, z: null };
    const cleaned = storableJson(value);
    expect(cleaned).toEqual({ ok: true, value: { "k\ufffdey": ["v\ufffd", { x: "ab" }], n: 1, t: true, z: null } });
    // The input is left as it was.
    expect(Object.keys(value)[0]).toBe("k\ud800ey\u0000");
    expect(JSON.stringify((cleaned as { value: unknown }).value)).not.toMatch(/\\ud[89ab]|\\u0000/);
  });

  it("walks 40,000 levels without recursion and refuses them by the limit", () => {
    const deep = JSON.parse(nested(40_000));
    expect(storableJson(deep)).toEqual({ ok: false, error: `nested deeper than ${MAX_JSON_DEPTH} levels` });
    expect(storableJson(JSON.parse(nested(64))).ok).toBe(true);
  });

  it("keeps an own __proto__ key a key, and leaves dates and buffers as they are", () => {
    // A string to clean, so the value is copied (a clean one comes back as it is).
    const parsed = JSON.parse('{"__proto__":{"polluted":true},"at":"x\\u0000"}');
    const cleaned = storableJson({ ...{}, body: parsed, when: new Date(0) });
    if (!cleaned.ok) throw new Error(cleaned.error);
    expect(Object.getPrototypeOf(cleaned.value.body)).toBe(Object.prototype);
    expect(Object.keys(cleaned.value.body)).toEqual(["__proto__", "at"]);
    expect(cleaned.value.body).not.toBe(parsed);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(cleaned.value.when).toBeInstanceOf(Date);
  });

  it("gives a value with nothing to clean back as it is, emoji included, and still finds one deep string to clean", () => {
    const clean = { text: "héllo 👋 世界", list: [{ k: "v" }, 1, null], nested: JSON.parse(nested(62)) };
    const same = storableJson(clean);
    expect(same.ok && same.value).toBe(clean);
    const dirty = { ...clean, list: [{ k: "v" }, { deep: [["x\ud83d"]] }] };
    const cleaned = storableJson(dirty);
    if (!cleaned.ok) throw new Error(cleaned.error);
    expect(cleaned.value).not.toBe(dirty);
    expect(cleaned.value.list[1]).toEqual({ deep: [["x\ufffd"]] });
    expect(cleaned.value.text).toBe(clean.text);
    expect(storableJson({ ["k\u0000"]: 1 })).toEqual({ ok: true, value: { k: 1 } });
    // The limit is the same as the copy's: 64 levels come back as they are, 65 are refused.
    const deepest = JSON.parse(nested(64));
    expect(storableJson(deepest)).toEqual({ ok: true, value: deepest });
    expect((storableJson(deepest) as { value: unknown }).value).toBe(deepest);
    expect(storableJson({ x: JSON.parse(nested(64)) })).toEqual({ ok: false, error: `nested deeper than ${MAX_JSON_DEPTH} levels` });
  });

  it("copies an object met twice once", () => {
    const shared = { s: "x\ud800" };
    const cleaned = storableJson({ a: shared, b: shared });
    if (!cleaned.ok) throw new Error(cleaned.error);
    expect(cleaned.value.a).toBe(cleaned.value.b);
    expect(cleaned.value.a.s).toBe(wellFormed("x\ud800"));
  });
});

describe("storableJsonCut", () => {
  it("cuts what nests too deep instead of refusing it, so it can always be stringified", () => {
    const cut = storableJsonCut(JSON.parse(nested(40_000)), 4) as unknown[];
    expect(JSON.stringify(cut)).toBe('[{"a":[{"a":"[nested deeper than 4 levels]"}]}]');
    expect(storableJsonCut({ k: "v\u0000" })).toEqual({ k: "v" });
  });
});
