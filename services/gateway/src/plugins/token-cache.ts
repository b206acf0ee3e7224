import type { ApiToken, ApiTokenRepository } from "@nahida/db";

export interface TokenCacheOptions {
  /** How long a looked-up token is trusted: a revocation on another replica takes effect within it. */
  ttlMs: number;
  /** Distinct tokens kept; the oldest lookup goes first. */
  maxEntries: number;
  /** `last_used_at` is written at most this often per token. */
  touchEveryMs: number;
  now?: () => number;
}

interface Entry {
  token: ApiToken;
  fetchedAt: number;
  touchedAt: number;
}

/**
 * API tokens by hash, so a request costs no Postgres round trip for its token: found tokens
 * are kept for `ttlMs` (a miss is never kept, so a token created on another replica works
 * at once), and `last_used_at` is written at most every `touchEveryMs`. A revocation through
 * this replica drops the token at once; one through another replica within `ttlMs`.
 */
export class TokenCache {
  private readonly entries = new Map<string, Entry>();
  /** Bumped by `forget`: a lookup that began before a revocation must not cache its stale row. */
  private generation = 0;
  private readonly now: () => number;

  constructor(
    private readonly tokens: Pick<ApiTokenRepository, "findByHash" | "touch">,
    private readonly o: TokenCacheOptions,
  ) {
    this.now = o.now ?? Date.now;
  }

  async lookup(tokenHash: string): Promise<ApiToken | null> {
    const now = this.now();
    const cached = this.entries.get(tokenHash);
    if (cached && now - cached.fetchedAt < this.o.ttlMs) return cached.token;
    const generation = this.generation;
    const token = await this.tokens.findByHash(tokenHash);
    this.entries.delete(tokenHash);
    if (!token || generation !== this.generation) return token;
    if (this.entries.size >= this.o.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(tokenHash, { token, fetchedAt: now, touchedAt: cached?.touchedAt ?? Number.NEGATIVE_INFINITY });
    return token;
  }

  /** Records a use; writes `last_used_at` only when the last write is older than `touchEveryMs`. */
  used(token: ApiToken): void {
    const entry = this.entries.get(token.tokenHash);
    const now = this.now();
    if (entry && now - entry.touchedAt < this.o.touchEveryMs) return;
    if (entry) entry.touchedAt = now;
    void this.tokens.touch(token.id).catch(() => undefined);
  }

  /** Drops a token (revoked here) so the next request reads it again. */
  forget(id: string): void {
    this.generation++;
    for (const [hash, entry] of this.entries) if (entry.token.id === id) this.entries.delete(hash);
  }
}
