import type { Cluster, Redis } from "ioredis";

// Extend or release only while the key still holds our id: a lock that expired and was
// taken by another replica must not be touched.
const RENEW = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/**
 * A Redis-held leadership with a TTL: at most one holder per key, renewed while alive,
 * taken over by another replica within `ttlMs` after the holder dies.
 */
export class RedisLeadership {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly key: string,
    private readonly holderId: string,
    readonly ttlMs: number,
  ) {}

  async tryAcquire(): Promise<boolean> {
    const result = await this.redis.set(this.key, this.holderId, "PX", this.ttlMs, "NX");
    if (result === "OK") return true;
    // Re-acquire our own lock after a restart of the loop.
    return (await this.redis.eval(RENEW, 1, this.key, this.holderId, String(this.ttlMs))) === 1;
  }

  async renew(): Promise<boolean> {
    return (await this.redis.eval(RENEW, 1, this.key, this.holderId, String(this.ttlMs))) === 1;
  }

  /** Who holds the lease now: this holder, another replica, or nobody (it expired, or was never taken). */
  async holder(): Promise<"self" | "other" | "none"> {
    const current = await this.redis.get(this.key);
    return current === null ? "none" : current === this.holderId ? "self" : "other";
  }

  async release(): Promise<void> {
    await this.redis.eval(RELEASE, 1, this.key, this.holderId);
  }
}
