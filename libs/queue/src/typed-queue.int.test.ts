import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { TEST_REDIS_URL, clearQueuePrefix, testQueuePrefix, waitFor } from "../../../test/support/infra";
import { createRedis } from "./redis";
import { InvalidJobPayloadError, TypedQueue, createConsumer, jobWaitSeconds } from "./typed-queue";

describe("TypedQueue", () => {
  let redis: Redis;
  let blocking: Redis;
  let prefix: string;
  let queue: TypedQueue<"outbound">;
  beforeAll(() => {
    redis = createRedis({ url: TEST_REDIS_URL });
    blocking = createRedis({ url: TEST_REDIS_URL, blocking: true });
    prefix = testQueuePrefix("typed_queue");
    queue = new TypedQueue("outbound", { connection: redis, prefix });
  });
  afterAll(async () => {
    await queue.close();
    redis.disconnect();
    blocking.disconnect();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
  });

  it("refuses a payload that breaks its catalog schema before it reaches Redis", async () => {
    await expect(queue.add("delivery.send", { deliveryId: "not-a-uuid" })).rejects.toBeInstanceOf(InvalidJobPayloadError);
    expect(await queue.queue.count()).toBe(0);
  });

  it("addOrRevive retries a job that failed for good and leaves a pending one alone", async () => {
    const id = "6f1c2d3e-0000-4000-8000-000000000001";
    let calls = 0;
    const worker = createConsumer(
      "outbound",
      {
        "delivery.send": async () => {
          calls++;
          if (calls === 1) throw new Error("postgres is down");
          return "sent";
        },
        "chat.action": async () => "ignored",
      },
      { connection: blocking, prefix, concurrency: 1, lockDurationMs: 5_000, stalledIntervalMs: 2_500 },
    );
    try {
      await queue.add("delivery.send", { deliveryId: id }, { jobId: id, attempts: 1 });
      await waitFor(async () => (await (await queue.queue.getJob(id))?.getState()) === "failed", 5_000, "the job to fail");
      // A plain add under the same id would be ignored while the failed job is kept.
      expect(await queue.addOrRevive("delivery.send", { deliveryId: id }, id)).toBe("retried");
      await waitFor(async () => (await (await queue.queue.getJob(id))?.getState()) === "completed", 5_000, "the retry to complete");
      expect(calls).toBe(2);
      expect(await queue.addOrRevive("delivery.send", { deliveryId: id }, id)).toBe("added");
      await waitFor(async () => calls === 3, 5_000, "the re-added job to run");

      // Redis lost the queue's lists but not the job's record: no list holds it, so nothing
      // would ever run it, and the sweeper must add it again.
      await worker.pause();
      const orphan = "6f1c2d3e-0000-4000-8000-000000000002";
      await queue.add("delivery.send", { deliveryId: orphan }, { jobId: orphan });
      await redis.del(`${prefix}:outbound:wait`, `${prefix}:outbound:prioritized`, `${prefix}:outbound:marker`);
      expect(await (await queue.queue.getJob(orphan))?.getState()).toBe("unknown");
      worker.resume();
      expect(await queue.addOrRevive("delivery.send", { deliveryId: orphan }, orphan)).toBe("added");
      await waitFor(async () => calls === 4, 5_000, "the orphaned job to run");

      // A job whose record lost its name and data (keys evicted one by one) fails for good
      // on every run; reviving it would loop. It is replaced by a fresh one.
      const damaged = "6f1c2d3e-0000-4000-8000-000000000003";
      await queue.add("delivery.send", { deliveryId: damaged }, { jobId: damaged });
      await waitFor(async () => calls === 5, 5_000, "the job to run once");
      await worker.pause();
      // As the sweeper meets it: failed (the worker refused a job without a name), record damaged.
      await redis.zrem(`${prefix}:outbound:completed`, damaged);
      await redis.zadd(`${prefix}:outbound:failed`, Date.now(), damaged);
      await redis.hdel(`${prefix}:outbound:${damaged}`, "name", "data");
      expect(await (await queue.queue.getJob(damaged))?.getState()).toBe("failed");
      expect(await queue.addOrRevive("delivery.send", { deliveryId: damaged }, damaged)).toBe("added");
      expect((await queue.queue.getJob(damaged))?.name).toBe("delivery.send");
      worker.resume();
      await waitFor(async () => calls === 6, 5_000, "the fresh job to run");
    } finally {
      await worker.close();
    }
  });
});

describe("jobWaitSeconds", () => {
  it("counts from when the job could first run, never below zero", () => {
    expect(jobWaitSeconds(1_000, 0, 1_250)).toBe(0.25);
    expect(jobWaitSeconds(1_000, 5_000, 6_500)).toBe(0.5);
    // Clocks of two hosts: a start stamped before the add is no wait, not a negative one.
    expect(jobWaitSeconds(1_000, 0, 900)).toBe(0);
  });
});
