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
    await expectAnsweredOnceThroughKill(d, {
      label: "redis sentinel failover (NAHIDA_LEASE_MS 3000, down-after-milliseconds 1000)",
      firstChat: 930_000_000,
      perSecond: 40,
      afterKillMs: 3_000,
      master: () => group.master(),
      kill: () => group.killMaster(),
    });
    expect(d.crashes).toEqual([]);
  }, 240_000);

  it("refuses to start when the sentinels know no master by the configured name, with their answer", async () => {
    await expect(d.start("agent-worker", { REDIS_SENTINEL_NAME: "no-such-master" })).rejects.toThrow(/REDIS_SENTINELS: cannot reach Redis at master no-such-master of sentinels .*: .*No such master with that name/);
  }, 60_000);
});
