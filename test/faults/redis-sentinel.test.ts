import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDeployment, type Deployment } from "../support/deployment";
import { expectAnsweredOnceThroughKill } from "../support/failover-traffic";
import { startSentinelGroup, type SentinelGroup } from "../support/redis-sentinel";

// Redis behind Sentinel (a master, a replica, three sentinels) with REDIS_SENTINELS in place
// of REDIS_URL: the master is SIGKILLed while messages flow through an ingress, an agent
// worker and a delivery process. The replica is promoted without the writes it had not
// yet received; every message is still answered, each once, from the ledger.

describe("a Redis Sentinel failover mid-traffic", () => {
  let group: SentinelGroup;
  let d: Deployment;
  beforeAll(async () => {
    group = await startSentinelGroup();
    d = await startDeployment("sentinel", ["ingress-telegram", "agent-worker", "delivery"], { NAHIDA_LEASE_MS: "3000" }, { redis: group });
  }, 120_000);
  afterAll(async () => {
    try {
      await d?.close();
    } finally {
      await group?.close();
    }
  });

  it("answers every message once after the master is killed, and prints how long the answers stopped", async () => {
    const before = await group.master();
    const figures = await expectAnsweredOnceThroughKill(d, { firstChat: 930_000_000, perSecond: 40, afterKillMs: 3_000, kill: () => group.killMaster() });
    const after = await group.master();
    expect(after.port).not.toBe(before.port);
    console.log(
      `redis sentinel failover (NAHIDA_LEASE_MS 3000, down-after-milliseconds 1000): master ${before.port} SIGKILLed, ${after.port} promoted; ` +
        `${figures.messages} messages; the first answer to a message sent after the kill ${figures.firstAnswerAfterKillMs} ms after it; ` +
        `longest pause between two answers ${figures.longestPauseMs} ms; slowest answer ${figures.slowestAnswerMs} ms`,
    );
    expect(d.crashes).toEqual([]);
  }, 240_000);

  it("refuses to start when the sentinels know no master by the configured name, with their answer", async () => {
    await expect(d.start("agent-worker", { REDIS_SENTINEL_NAME: "no-such-master" })).rejects.toThrow(/REDIS_SENTINELS: cannot reach Redis at master no-such-master of sentinels .*: .*No such master with that name/);
  }, 60_000);
});
