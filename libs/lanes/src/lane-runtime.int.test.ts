import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { recoveryTimings } from "@nahida/contracts";
import { Prisma } from "@nahida/db";
import { TypedQueue, createRedis } from "@nahida/queue";
import {
  TEST_REDIS_URL,
  clearQueuePrefix,
  createTestDatabase,
  testQueuePrefix,
  waitFor,
  type TestDatabase,
} from "../../../test/support/infra";
import { LaneProducer, LaneRuntime, runOutcomeLabel, type LaneHandler, type LaneRunContext } from "./lane-runtime";
import { LaneStore, LeaseLostError } from "./lane.store";

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

describe("LaneRuntime (one process, real Postgres and Redis)", () => {
  let t: TestDatabase;
  let prefix: string;
  let redis: Redis;
  let blocking: Redis;
  let wakeQueue: TypedQueue<"lanes">;
  let producer: LaneProducer;
  let runtime: LaneRuntime | undefined;
  let handler: LaneHandler;
  const runs: { laneKey: string; refs: string[]; attempts: number[] }[] = [];

  beforeAll(async () => {
    t = await createTestDatabase("lane_runtime");
    prefix = testQueuePrefix("lane_runtime");
    redis = createRedis({ url: TEST_REDIS_URL });
    blocking = createRedis({ url: TEST_REDIS_URL, blocking: true });
    wakeQueue = new TypedQueue("lanes", { connection: redis, prefix });
    producer = new LaneProducer(t.db, wakeQueue);
    runtime = new LaneRuntime({
      db: t.db,
      wakeQueue,
      consumerConnection: blocking,
      prefix,
      workerId: "test-worker",
      timings: { ...recoveryTimings(2_000), laneSweepMs: 300 },
      retryBackoffMs: 100,
      maxAttempts: 3,
      handler: (run) => handler(run),
      logger: silent,
    });
    runtime.start();
  });

  afterAll(async () => {
    await runtime?.close();
    await wakeQueue?.close();
    redis?.disconnect();
    blocking?.disconnect();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await t?.drop();
  });

  beforeEach(() => {
    runs.length = 0;
    handler = async (run) => {
      runs.push({ laneKey: run.laneKey, refs: run.items.map((i) => i.refId), attempts: run.items.map((i) => i.attempts) });
    };
  });

  /** Holds the first run of a lane until `release` is called. */
  function blockFirstRun(): { started: Promise<void>; release: () => void } {
    let release!: () => void;
    let markStarted!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const started = new Promise<void>((r) => (markStarted = r));
    let first = true;
    handler = async (run) => {
      runs.push({ laneKey: run.laneKey, refs: run.items.map((i) => i.refId), attempts: run.items.map((i) => i.attempts) });
      if (first) {
        first = false;
        markStarted();
        await gate;
      }
    };
    return { started, release };
  }

  it("collect: messages that arrive during a run are handled together in the next run", async () => {
    const lane = "test:private:collect";
    const { started, release } = blockFirstRun();
    await producer.append(lane, { kind: "event", refId: "c1" });
    await started;
    for (const ref of ["c2", "c3", "c4"]) await producer.append(lane, { kind: "event", refId: ref });
    release();
    await waitFor(async () => runs.flatMap((r) => r.refs).length === 4, 10_000, "all four handled");
    expect(runs.map((r) => r.refs)).toEqual([["c1"], ["c2", "c3", "c4"]]);
  });

  it("followup: one run per message, in order", async () => {
    const lane = "test:private:followup";
    await new LaneStore(t.db).setMode(lane, "followup");
    const { started, release } = blockFirstRun();
    await producer.append(lane, { kind: "event", refId: "f1" });
    await started;
    for (const ref of ["f2", "f3"]) await producer.append(lane, { kind: "event", refId: ref });
    release();
    await waitFor(async () => runs.length === 3, 10_000, "three runs");
    expect(runs.map((r) => r.refs)).toEqual([["f1"], ["f2"], ["f3"]]);
  });

  it("appending the same item twice keeps one item and one run", async () => {
    const lane = "test:private:dupe";
    const a = await producer.append(lane, { kind: "event", refId: "d1" });
    const b = await producer.append(lane, { kind: "event", refId: "d1" });
    expect(b).toEqual({ ...a, created: false });
    // The lane given back with its one item done: no run can follow without a new item.
    await waitFor(
      async () => (await t.db.pool.query("SELECT 1 FROM lanes l JOIN lane_items i ON i.lane_key = l.key WHERE l.key = $1 AND l.lease_token IS NULL AND i.status = 'done'", [lane])).rowCount === 1,
      10_000,
      "the lane released with its item done",
    );
    expect(runs.map((r) => r.refs)).toEqual([["d1"]]);
    expect((await t.db.pool.query("SELECT count(*)::int AS n FROM lane_runs WHERE lane_key = $1", [lane])).rows[0].n).toBe(1);
  });

  it("a failed run is retried with backoff and its result is committed once", async () => {
    const lane = "test:private:flaky";
    let calls = 0;
    handler = async (run) => {
      calls++;
      if (calls === 1) throw new Error("transient");
      await run.commit(async (tx) => {
        await tx.$executeRaw`INSERT INTO turns (id, session_id, role, content)
          SELECT gen_random_uuid(), s.id, 'assistant', ${run.items[0]!.refId} FROM sessions s WHERE s.lane_key = ${lane}`;
      });
      runs.push({ laneKey: run.laneKey, refs: run.items.map((i) => i.refId), attempts: run.items.map((i) => i.attempts) });
    };
    await t.db.prisma.session.create({ data: { laneKey: lane } });
    await producer.append(lane, { kind: "event", refId: "r1" });
    await waitFor(async () => runs.length === 1, 10_000, "the retry to succeed");
    expect(runs[0]!.attempts).toEqual([2]);
    expect(await t.db.prisma.turn.count({ where: { content: "r1" } })).toBe(1);
    const statuses = await t.db.prisma.laneRun.findMany({ where: { laneKey: lane }, orderBy: { startedAt: "asc" } });
    expect(statuses.map((s) => s.status)).toEqual(["failed", "succeeded"]);
  });

  it("a poison message fails for good after maxAttempts and the lane moves on", async () => {
    const lane = "test:private:poison";
    handler = async (run) => {
      if (run.items.some((i) => i.refId === "p1")) throw new Error("always fails");
      runs.push({ laneKey: run.laneKey, refs: run.items.map((i) => i.refId), attempts: run.items.map((i) => i.attempts) });
    };
    await new LaneStore(t.db).setMode(lane, "followup");
    await producer.append(lane, { kind: "event", refId: "p1" });
    await producer.append(lane, { kind: "event", refId: "p2" });
    await waitFor(async () => runs.length === 1, 15_000, "p2 to run");
    expect(runs[0]!.refs).toEqual(["p2"]);
    const p1 = await t.db.prisma.laneItem.findFirst({ where: { refId: "p1" } });
    expect(p1).toMatchObject({ status: "failed", attempts: 3, error: "always fails" });
  });

  it("an outage does not count as an attempt: a message that meets five in a row is still answered", async () => {
    const lane = "test:private:outage";
    let outages = 0;
    handler = async (run) => {
      if (outages < 5) {
        outages++;
        throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
      }
      runs.push({ laneKey: run.laneKey, refs: run.items.map((i) => i.refId), attempts: run.items.map((i) => i.attempts) });
    };
    await producer.append(lane, { kind: "event", refId: "o1" });
    // The run that got through committed the item, as its first counted attempt.
    await waitFor(async () => (await t.db.prisma.laneItem.findFirst({ where: { refId: "o1" } }))?.status === "done", 20_000, "o1 to be done");
    expect(runs.filter((r) => r.laneKey === lane)).toEqual([{ laneKey: lane, refs: ["o1"], attempts: [1] }]);
  });

  it("a commit after the lease was taken over is refused and writes nothing", async () => {
    const store = new LaneStore(t.db);
    const lane = "test:private:fence";
    await store.append(lane, { kind: "event", refId: "x1" });
    const lease = await store.tryClaim(lane, "old-worker", 50);
    expect(lease).not.toBeNull();
    await new Promise((r) => setTimeout(r, 100));
    const takeover = await store.tryClaim(lane, "new-worker", 10_000);
    expect(takeover).not.toBeNull();
    await expect(
      store.fenced(lease!, async (tx) => {
        await tx.$executeRaw`INSERT INTO lanes (key) VALUES ('must-not-exist')`;
      }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(await t.db.prisma.lane.count({ where: { key: "must-not-exist" } })).toBe(0);
    await store.release(takeover!);
  });

  it("a one-statement commit writes its parts and ends the run; a rejected item fails with its reason", async () => {
    const lane = "test:private:parts";
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let markStarted!: () => void;
    const started = new Promise<void>((r) => (markStarted = r));
    handler = async (run) => {
      // The first run holds the lane until q1 and q2 are in, so the next run takes both.
      if (run.items.some((i) => i.refId === "q0")) {
        markStarted();
        await gate;
      }
      const second = run.items.find((i) => i.refId === "q2");
      if (second) run.reject(second.id, "not for this lane");
      await run.commitParts([(fence) => Prisma.sql`INSERT INTO lanes (key) SELECT ${`written-by-${run.runId}`} WHERE ${fence}`]);
    };
    await producer.append(lane, { kind: "event", refId: "q0" });
    await started;
    await producer.append(lane, { kind: "event", refId: "q1" });
    await producer.append(lane, { kind: "event", refId: "q2" });
    release();
    await waitFor(async () => (await t.db.prisma.laneItem.count({ where: { laneKey: lane, status: { in: ["done", "failed"] } } })) === 3, 10_000, "all three items to end");
    const items = await t.db.prisma.laneItem.findMany({ where: { laneKey: lane }, orderBy: { seq: "asc" } });
    expect(items.map((i) => [i.refId, i.status, i.error])).toEqual([
      ["q0", "done", null],
      ["q1", "done", null],
      ["q2", "failed", "not for this lane"],
    ]);
    expect(items[1]!.runId).toBe(items[2]!.runId);
    for (const runId of [items[0]!.runId!, items[2]!.runId!]) {
      expect((await t.db.prisma.laneRun.findUniqueOrThrow({ where: { id: runId } })).status).toBe("succeeded");
      expect(await t.db.prisma.lane.count({ where: { key: `written-by-${runId}` } })).toBe(1);
    }
  });

  it("a one-statement commit that waited for the lane row and finds it taken over writes nothing", async () => {
    const store = new LaneStore(t.db);
    const lane = "test:private:fence-parts";
    await store.append(lane, { kind: "event", refId: "y1" });
    const claimed = await store.claimAndStart(lane, "old-worker", 10_000, { workerId: "old-worker", maxBatchSize: 10, maxAttempts: 3 });
    const { lease, run } = claimed!;
    // A takeover holds the lane row while the commit starts, and changes the token.
    const takeover = t.db.pool.connect();
    const client = await takeover;
    await client.query("BEGIN");
    await client.query("SELECT 1 FROM lanes WHERE key = $1 FOR UPDATE", [lane]);
    // Its outcome is taken at once: the commit may fail while the takeover's COMMIT is still
    // being awaited below, and a rejection with no handler yet is an unhandled one (seen in CI).
    const commit = store
      .commitStatement(lease, run!.runId, new Map(), [(fence) => Prisma.sql`INSERT INTO lanes (key) SELECT 'must-not-exist-parts' WHERE ${fence}`])
      .then(
        () => null,
        (error: unknown) => error,
      );
    await waitFor(async () => (await t.db.pool.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%must-not-exist-parts%'")).rowCount === 1, 5_000, "the commit to wait for the lane row");
    await client.query("UPDATE lanes SET lease_token = gen_random_uuid() WHERE key = $1", [lane]);
    await client.query("COMMIT");
    client.release();
    expect(await commit).toBeInstanceOf(LeaseLostError);
    expect(await t.db.prisma.lane.count({ where: { key: "must-not-exist-parts" } })).toBe(0);
    expect((await t.db.prisma.laneRun.findUniqueOrThrow({ where: { id: run!.runId } })).status).toBe("running");
    expect((await t.db.prisma.laneItem.findFirstOrThrow({ where: { laneKey: lane } })).status).toBe("running");
  });

  it("a claim that waited for the lane row behind a commit starts no run for the items that commit finished", async () => {
    const store = new LaneStore(t.db);
    const lane = "test:private:claim-behind-commit";
    await store.append(lane, { kind: "event", refId: "z1" });
    // Another worker claims the free lane, runs z1 and commits, giving the lane back, all
    // while a second worker's claim waits for the lane row: one transaction stands for that
    // here. The waiting claim then finds the lane free, but its snapshot, taken before the
    // first claim, still sees z1 open.
    const client = await t.db.pool.connect();
    await client.query("BEGIN");
    await client.query("UPDATE lanes SET updated_at = now() WHERE key = $1", [lane]);
    await client.query("UPDATE lane_items SET status = 'done', done_at = now() WHERE lane_key = $1", [lane]);
    const second = store.claimAndStart(lane, "new-worker", 10_000, { workerId: "new-worker", maxBatchSize: 10, maxAttempts: 3 });
    await waitFor(async () => (await t.db.pool.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%runnable%'")).rowCount === 1, 5_000, "the claim to wait for the lane row");
    await client.query("COMMIT");
    client.release();
    const claimed = await second;
    expect(claimed).not.toBeNull();
    expect(claimed!.run).toBeNull();
    expect((await t.db.pool.query("SELECT status FROM lane_runs WHERE lane_key = $1", [lane])).rowCount).toBe(0);
    await store.release(claimed!.lease);
  });

  it("close() hands back a run that outlives the shutdown grace, without counting the attempt", async () => {
    const otherPrefix = testQueuePrefix("lane_shutdown");
    const otherQueue = new TypedQueue("lanes", { connection: redis, prefix: otherPrefix });
    const otherBlocking = createRedis({ url: TEST_REDIS_URL, blocking: true });
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const stopping = new LaneRuntime({
      db: t.db,
      wakeQueue: otherQueue,
      consumerConnection: otherBlocking,
      prefix: otherPrefix,
      workerId: "stopping-worker",
      shutdownGraceMs: 200,
      logger: silent,
      handler: async (run) => {
        started();
        await new Promise((_, reject) => run.signal.addEventListener("abort", () => reject(run.signal.reason)));
      },
    });
    stopping.start();
    try {
      await new LaneProducer(t.db, otherQueue).append("test:private:shutdown", { kind: "event", refId: "s1" });
      await running;
      await stopping.close();
      const item = await t.db.prisma.laneItem.findFirst({ where: { refId: "s1" } });
      expect(item).toMatchObject({ status: "pending", attempts: 0, runId: null });
      const runs = await t.db.prisma.laneRun.findMany({ where: { laneKey: "test:private:shutdown" } });
      expect(runs.map((r) => [r.status, r.error])).toEqual([["lost", "handed back at shutdown"]]);
      const lane = await t.db.prisma.lane.findUnique({ where: { key: "test:private:shutdown" } });
      expect(lane?.leaseToken).toBeNull();
    } finally {
      await otherQueue.close();
      otherBlocking.disconnect();
      await clearQueuePrefix(TEST_REDIS_URL, otherPrefix);
    }
  });

  it("a run's signal is aborted when its lease is lost", async () => {
    const lane = "test:private:abort";
    let seen: LaneRunContext | undefined;
    let commitOutcome: string | undefined;
    handler = async (run) => {
      // A lane left over from an earlier test just finishes.
      if (run.laneKey !== lane) return run.commit(async () => undefined);
      seen = run;
      // Simulate a takeover: another owner overwrites the lease token.
      await t.db.pool.query("UPDATE lanes SET lease_token = gen_random_uuid() WHERE key = $1", [lane]);
      await waitFor(async () => run.signal.aborted, 5_000, "abort");
      try {
        await run.commit(async () => undefined);
        commitOutcome = "committed";
      } catch (error) {
        commitOutcome = (error as Error).name;
        throw error;
      }
    };
    await producer.append(lane, { kind: "event", refId: "a1" });
    await waitFor(async () => seen?.signal.aborted, 10_000, "the run to see the abort");
    await waitFor(async () => commitOutcome, 10_000, "the run's commit to be refused");
    expect(commitOutcome).toBe("LeaseLostError");
    const item = await t.db.prisma.laneItem.findFirst({ where: { refId: "a1" } });
    expect(item?.status).toBe("running");
    // Hand the lane back so the runtime's later sweeps do not touch a foreign lease forever.
    await t.db.pool.query("UPDATE lanes SET lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL WHERE key = $1", [lane]);
  });
});

describe("runOutcomeLabel", () => {
  it("names every outcome of a started run", () => {
    expect(runOutcomeLabel({ kind: "ran" })).toBe("completed");
    expect(runOutcomeLabel({ kind: "failed", retryInMs: 1 })).toBe("failed");
    expect(runOutcomeLabel({ kind: "failed", retryInMs: 1, outage: true })).toBe("outage");
    expect(runOutcomeLabel({ kind: "handed-back" })).toBe("handed_back");
    expect(runOutcomeLabel({ kind: "lease-lost" })).toBe("lease_lost");
  });
});
