import { describe, expect, it } from "vitest";
import type { ApiToken } from "@nahida/db";
import { TokenCache } from "./token-cache";

const token = (id: string, hash: string): ApiToken =>
  ({ id, name: id, tokenHash: hash, prefix: "nah_", scopes: ["read"], createdAt: new Date(0), lastUsedAt: null, revokedAt: null }) as ApiToken;

function subject() {
  let now = 0;
  const reads: string[] = [];
  const touches: string[] = [];
  const stored = new Map([["h1", token("t1", "h1")]]);
  const cache = new TokenCache(
    {
      findByHash: async (hash) => (reads.push(hash), stored.get(hash) ?? null),
      touch: async (id) => void touches.push(id),
    },
    { ttlMs: 5_000, maxEntries: 2, touchEveryMs: 60_000, now: () => now },
  );
  return { cache, reads, touches, stored, advance: (ms: number) => (now += ms) };
}

describe("TokenCache", () => {
  it("reads a token once per TTL, and never keeps a miss", async () => {
    const s = subject();
    await s.cache.lookup("h1");
    s.advance(4_999);
    await s.cache.lookup("h1");
    expect(s.reads).toEqual(["h1"]);
    s.advance(1);
    await s.cache.lookup("h1");
    expect(s.reads).toEqual(["h1", "h1"]);
    expect(await s.cache.lookup("h2")).toBeNull();
    s.stored.set("h2", token("t2", "h2"));
    expect((await s.cache.lookup("h2"))?.id).toBe("t2");
  });

  it("writes last_used_at at most once a minute per token", async () => {
    const s = subject();
    const t = (await s.cache.lookup("h1"))!;
    s.cache.used(t);
    s.advance(30_000);
    await s.cache.lookup("h1");
    s.cache.used(t);
    s.advance(30_000);
    s.cache.used(t);
    expect(s.touches).toEqual(["t1", "t1"]);
  });

  it("forgets a revoked token at once and bounds how many it keeps", async () => {
    const s = subject();
    await s.cache.lookup("h1");
    s.cache.forget("t1");
    await s.cache.lookup("h1");
    expect(s.reads).toEqual(["h1", "h1"]);
    s.stored.set("h2", token("t2", "h2")).set("h3", token("t3", "h3"));
    await s.cache.lookup("h2");
    await s.cache.lookup("h3");
    await s.cache.lookup("h1");
    expect(s.reads).toEqual(["h1", "h1", "h2", "h3", "h1"]);
  });
});
