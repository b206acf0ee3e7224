import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import type { Clock, CronCreateRequest } from "@nahida/contracts";
import { CronCreateRequest as CronCreateSchema } from "@nahida/contracts";
import { CronJobs } from "@nahida/cron";
import { createRepositories, type Repositories } from "@nahida/db";
import { LaneStore } from "@nahida/lanes";
import { createLogger } from "@nahida/observability";
import { Outbox } from "@nahida/outbox";
import { TypedQueue, createRedis } from "@nahida/queue";
import { createScheduler, type Scheduler } from "@nahida/scheduler";
import { TEST_REDIS_URL, clearQueuePrefix, createTestDatabase, testQueuePrefix, waitFor, type TestDatabase } from "../support/infra";

/** A clock the test moves; the scheduler decides everything from it. */
class SetClock implements Clock {
  constructor(private at: Date) {}
  now = () => new Date(this.at);
  set(at: Date | string) {
    this.at = new Date(at);
  }
  advance(ms: number) {
    this.at = new Date(this.at.getTime() + ms);
  }
}

describe("the scheduler, driven by a set clock", () => {
  let t: TestDatabase;
  let redis: Redis;
  let prefix: string;
  let repos: Repositories;
  let outbound: TypedQueue<"outbound">;
  let lanesQueue: TypedQueue<"lanes">;
  const clock = new SetClock(new Date("2026-01-05T08:00:00Z"));
  let jobs: CronJobs;

  const schedulerWith = (overrides: { maxFailures?: number; queue?: TypedQueue<"outbound"> } = {}): Scheduler => {
    const outbox = new Outbox({ ...repos, transaction: (fn) => t.db.prisma.$transaction(fn), queue: overrides.queue ?? outbound, channels: ["telegram"], deliveryTtlMs: 3_600_000, clock });
    return createScheduler({
      cron: repos.cron,
      sessions: repos.sessions,
      outbox,
      lanes: new LaneStore(t.db),
      wakeLane: async (laneKey) => void (await lanesQueue.add("lane.wake", { laneKey })),
      transaction: (fn) => t.db.prisma.$transaction(fn),
      clock,
      logger: createLogger({ level: "silent", service: "test-scheduler" }),
      pollMs: 100,
      maxFailures: overrides.maxFailures ?? 5,
    });
  };

  const createJob = async (body: Record<string, unknown>) => {
    const result = await jobs.create(CronCreateSchema.parse({ name: "job", target: "telegram:private:1", payload: { kind: "notify", text: "x" }, ...body }) as CronCreateRequest, "token:test");
    if (!result.ok) throw new Error(result.error.message);
    return result.value;
  };
  const runs = async (jobId: string) =>
    (await t.db.prisma.cronRun.findMany({ where: { jobId }, orderBy: { slot: "asc" } })).map((r) => ({ slot: r.slot.toISOString(), status: r.status, attempt: r.attempt, error: r.error, deliveryIds: r.deliveryIds }));

  beforeAll(async () => {
    t = await createTestDatabase("scheduler");
    prefix = testQueuePrefix("scheduler");
    redis = createRedis({ url: TEST_REDIS_URL });
    outbound = new TypedQueue("outbound", { connection: redis, prefix });
    lanesQueue = new TypedQueue("lanes", { connection: redis, prefix });
    repos = createRepositories(t.db);
    jobs = new CronJobs({ cron: repos.cron, transaction: (fn) => t.db.prisma.$transaction(fn), clock, defaultTz: "UTC", minIntervalMs: 1_000, maxJobsPerTarget: 50, channels: ["telegram"] });
  });
  afterAll(async () => {
    await outbound?.close();
    await lanesQueue?.close();
    redis?.disconnect();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await t?.drop();
  });

  it("down for three slots: run_once fires one catch-up and skip none, both recorded", async () => {
    clock.set("2026-01-05T09:00:00Z");
    const once = await createJob({ name: "once", schedule: { kind: "every", every_ms: 10_000 }, missed: "run_once" });
    const skip = await createJob({ name: "skip", schedule: { kind: "every", every_ms: 10_000 }, missed: "skip" });
    const scheduler = schedulerWith();
    clock.set("2026-01-05T09:00:10.050Z");
    expect((await scheduler.tick()).fired).toBe(2);
    // Down from 09:00:10 to 09:00:47: the slots at 20, 30 and 40 s pass unfired.
    clock.set("2026-01-05T09:00:47Z");
    const back = await scheduler.tick();
    expect(back.fired).toBe(1);
    expect(await runs(once.id)).toEqual([
      expect.objectContaining({ slot: "2026-01-05T09:00:10.000Z", status: "running" }),
      expect.objectContaining({ slot: "2026-01-05T09:00:20.000Z", status: "skipped" }),
      expect.objectContaining({ slot: "2026-01-05T09:00:30.000Z", status: "skipped" }),
      expect.objectContaining({ slot: "2026-01-05T09:00:40.000Z", status: "running" }),
    ]);
    expect((await runs(skip.id)).map((r) => [r.slot.slice(17, 19), r.status])).toEqual([
      ["10", "running"],
      ["20", "skipped"],
      ["30", "skipped"],
      ["40", "skipped"],
    ]);
    // Both wait for 09:00:50 again.
    for (const job of [once, skip]) expect((await repos.cron.get(job.id))!.nextSlot!.toISOString()).toBe("2026-01-05T09:00:50.000Z");
    // A second tick at the same instant finds nothing due: a slot is fired or recorded once.
    expect(await scheduler.tick()).toMatchObject({ fired: 0, recorded: 0 });
    for (const job of [once, skip]) await jobs.delete(job.id);
  });

  it("a scheduler that was up but busy fires every late slot; only slots due while none ran follow the policy", async () => {
    clock.set("2026-01-05T09:30:00Z");
    const job = await createJob({ name: "busy", schedule: { kind: "every", every_ms: 10_000 }, missed: "skip" });
    const scheduler = schedulerWith();
    clock.set("2026-01-05T09:30:10.050Z");
    await scheduler.tick();
    // Other replicas beat every second, but no claim of this job got through for 25 s.
    for (let t = 11; t <= 35; t++) await repos.cron.beat(new Date(`2026-01-05T09:30:${String(t).padStart(2, "0")}.000Z`));
    clock.set("2026-01-05T09:30:35.500Z");
    expect((await scheduler.tick()).fired).toBe(2);
    expect((await runs(job.id)).map((r) => [r.slot.slice(17, 19), r.status])).toEqual([
      ["10", "running"],
      ["20", "running"],
      ["30", "running"],
    ]);
    await jobs.delete(job.id);
  });

  it("records slots older than the catch-up window as missed and never fires them late", async () => {
    clock.set("2026-01-05T10:00:00Z");
    const job = await createJob({ name: "window", schedule: { kind: "every", every_ms: 60_000 }, catchup_window_ms: 120_000 });
    const scheduler = schedulerWith();
    // Down for ten minutes and a half: slots 10:01 .. 10:10.
    clock.set("2026-01-05T10:10:30Z");
    expect((await scheduler.tick()).fired).toBe(1);
    const recorded = await runs(job.id);
    expect(recorded.filter((r) => r.status === "missed").map((r) => r.slot.slice(11, 16))).toEqual(["10:01", "10:02", "10:03", "10:04", "10:05", "10:06", "10:07", "10:08"]);
    expect(recorded.filter((r) => r.status === "skipped").map((r) => r.slot.slice(11, 16))).toEqual(["10:09"]);
    expect(recorded.filter((r) => r.status === "running").map((r) => r.slot.slice(11, 16))).toEqual(["10:10"]);
    await jobs.delete(job.id);
  });

  it("fires 30 2 * * * in Europe/Berlin exactly once on the spring-forward and on the fall-back day", async () => {
    const scheduler = schedulerWith();
    for (const [day, from, expected] of [
      ["spring", "2026-03-28T23:00:00Z", "2026-03-29T01:30:00.000Z"],
      ["fall", "2026-10-24T22:00:00Z", "2026-10-25T00:30:00.000Z"],
    ] as const) {
      clock.set(from);
      const job = await createJob({ name: `dst-${day}`, schedule: { kind: "cron", expr: "30 2 * * *", tz: "Europe/Berlin" } });
      // Through the night in 30-second steps, ticking at each.
      for (let step = 0; step < 5 * 120; step++) {
        clock.advance(30_000);
        await scheduler.tick();
      }
      expect(await runs(job.id)).toEqual([expect.objectContaining({ slot: expected, status: "running" })]);
      await jobs.delete(job.id);
    }
  });

  it("retries a failed notify after 30 s, 1 min and 5 min, then records it failed; disables the job after repeated failures and tells its chat once", async () => {
    clock.set("2026-01-06T00:00:00Z");
    const job = await createJob({ name: "flaky", schedule: { kind: "every", every_ms: 3_600_000 }, target: "telegram:private:42" });
    const scheduler = schedulerWith({ maxFailures: 2 });
    const failLatest = async () => {
      const [run] = (await runs(job.id)).filter((r) => r.status === "running");
      await t.db.prisma.delivery.update({ where: { id: run!.deliveryIds.at(-1)! }, data: { status: "failed", error: "Bad Request: chat not found" } });
    };
    for (const fire of [1, 2]) {
      clock.advance(3_600_000);
      expect((await scheduler.tick()).fired).toBe(1);
      for (const [attempt, backoffMs] of [[1, 30_000], [2, 60_000], [3, 300_000]] as const) {
        await failLatest();
        clock.advance(1_000);
        await scheduler.tick();
        const retrying = (await t.db.prisma.cronRun.findFirst({ where: { jobId: job.id, status: "retrying" } }))!;
        expect({ attempt: retrying.attempt, retryInMs: retrying.retryAt!.getTime() - clock.now().getTime() }).toEqual({ attempt, retryInMs: backoffMs });
        clock.advance(backoffMs);
        expect((await scheduler.tick()).started).toBe(1);
      }
      await failLatest();
      clock.advance(1_000);
      await scheduler.tick();
      const last = (await runs(job.id)).at(-1)!;
      expect(last).toMatchObject({ status: "failed", attempt: 4, error: "Bad Request: chat not found" });
      expect(new Set(last.deliveryIds).size).toBe(4);
      expect((await repos.cron.get(job.id))!.consecutiveFailures).toBe(fire);
    }
    const disabled = (await repos.cron.get(job.id))!;
    expect(disabled).toMatchObject({ enabled: false, nextRunAt: null, disabledReason: expect.stringMatching(/disabled after 2 failed fires in a row; last error: Bad Request: chat not found/) });
    const told = await t.db.prisma.delivery.findMany({ where: { target: "telegram:private:42", idempotencyKey: { contains: ":disabled:" } } });
    expect(told).toHaveLength(1);
    expect((told[0]!.message as { text: string }).text).toMatch(/The scheduled job "flaky" was disabled after 2 failed runs/);
    // Disabled: nothing fires any more.
    clock.advance(3 * 3_600_000);
    expect((await scheduler.tick()).fired).toBe(0);
    await jobs.delete(job.id);
  });

  it("does not send a failed notify again when a part reached the platform, or when it expired", async () => {
    clock.set("2026-01-06T12:00:00Z");
    const job = await createJob({ name: "partial", schedule: { kind: "every", every_ms: 3_600_000 }, target: "telegram:private:43" });
    const scheduler = schedulerWith();
    for (const [fire, update] of [
      [1, { status: "failed", sentParts: 1, error: "Bad Request: message is too long" }],
      [2, { status: "expired", error: null }],
    ] as const) {
      clock.advance(3_600_000);
      expect((await scheduler.tick()).fired).toBe(1);
      const [run] = (await runs(job.id)).filter((r) => r.status === "running");
      await t.db.prisma.delivery.update({ where: { id: run!.deliveryIds[0]! }, data: update });
      clock.advance(1_000);
      await scheduler.tick();
      expect((await runs(job.id)).at(-1)).toMatchObject({ status: "failed", attempt: 1 });
      expect((await repos.cron.get(job.id))!.consecutiveFailures).toBe(fire);
    }
    await jobs.delete(job.id);
  });

  it("a fire that cannot be written (its channel is gone) is retried, then failed, then counted", async () => {
    clock.set("2026-01-06T18:00:00Z");
    const prepared = jobs.prepare(CronCreateSchema.parse({ name: "gone", target: "telegram:private:44", schedule: { kind: "every", every_ms: 3_600_000 }, payload: { kind: "notify", text: "x" } }), "token:test");
    if (!prepared.ok) throw new Error(prepared.error.message);
    const job = await repos.cron.create({ ...prepared.value, target: "retired:private:44" });
    const scheduler = schedulerWith();
    clock.advance(3_600_000);
    await scheduler.tick();
    for (const backoffMs of [30_000, 60_000, 300_000]) {
      expect((await runs(job.id)).at(-1)).toMatchObject({ status: "retrying", error: expect.stringMatching(/channel "retired" is not registered/) });
      clock.advance(backoffMs);
      await scheduler.tick();
    }
    expect((await runs(job.id)).at(-1)).toMatchObject({ status: "failed", attempt: 4, deliveryIds: [] });
    expect((await repos.cron.get(job.id))!.consecutiveFailures).toBe(1);
    await jobs.delete(job.id);
  });

  it("a job paused while its fire waits for a retry does not send the retry", async () => {
    clock.set("2026-01-06T21:00:00Z");
    const job = await createJob({ name: "paused", schedule: { kind: "every", every_ms: 3_600_000 }, target: "telegram:private:45" });
    const scheduler = schedulerWith();
    clock.advance(3_600_000);
    await scheduler.tick();
    const [run] = await runs(job.id);
    await t.db.prisma.delivery.update({ where: { id: run!.deliveryIds[0]! }, data: { status: "failed", error: "Bad Gateway" } });
    clock.advance(1_000);
    await scheduler.tick();
    expect((await runs(job.id))[0]).toMatchObject({ status: "retrying" });
    expect((await jobs.update(job.id, { enabled: false })).ok).toBe(true);
    clock.advance(30_000);
    await scheduler.tick();
    expect((await runs(job.id))[0]).toMatchObject({ status: "skipped", error: "the job was disabled before its retry", deliveryIds: [run!.deliveryIds[0]] });
    await jobs.delete(job.id);
  });

  it("a job that succeeds resets its failure count, and a finished at job with delete_after_run goes away", async () => {
    clock.set("2026-01-07T00:00:00Z");
    const job = await createJob({ name: "once-at", schedule: { kind: "at", at: "2026-01-07T00:01:00Z" } });
    expect(job.deleteAfterRun).toBe(true);
    const scheduler = schedulerWith();
    clock.set("2026-01-07T00:01:00.200Z");
    expect((await scheduler.tick()).fired).toBe(1);
    expect((await repos.cron.get(job.id))).toMatchObject({ enabled: false, nextSlot: null });
    const [run] = await runs(job.id);
    await t.db.prisma.delivery.update({ where: { id: run!.deliveryIds[0]! }, data: { status: "sent" } });
    clock.advance(1_500);
    expect((await scheduler.tick()).finished).toBe(1);
    expect(await repos.cron.get(job.id)).toBeNull();
  });

  it("replicas ticking at the same instants fire every slot once", async () => {
    clock.set("2026-01-08T00:00:00Z");
    const many = await Promise.all(Array.from({ length: 40 }, (_, i) => createJob({ name: `r${i}`, target: `telegram:private:${1000 + i}`, schedule: { kind: "every", every_ms: 1_000 } })));
    const replicas = [schedulerWith(), schedulerWith(), schedulerWith()];
    for (let step = 0; step < 10; step++) {
      clock.advance(1_000);
      await Promise.all(replicas.map((r) => r.tick()));
    }
    for (const job of many) {
      const rows = await runs(job.id);
      expect(rows.map((r) => r.status)).toEqual(Array(10).fill("running"));
      expect(new Set(rows.map((r) => r.slot)).size).toBe(10);
    }
    const deliveries = await t.db.prisma.delivery.count({ where: { source: { in: many.map((j) => `cron:${j.id}`) } } });
    expect(deliveries).toBe(400);
  });

  // Last: its clock is the latest of the file's, and the beats it leaves are too.
  it("fires on while Redis holds its wake-ups: the loop does not wait for them, and stop() does", async () => {
    clock.set("2026-01-09T12:00:00.500Z");
    // A queue whose adds hang until the gate opens: Redis blocked by a long script.
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const added: string[] = [];
    const held = {
      add: async (_name: string, payload: { deliveryId: string }) => {
        await gate;
        added.push(payload.deliveryId);
      },
      addBulk: async (items: { payload: { deliveryId: string } }[]) => {
        await gate;
        added.push(...items.map((i) => i.payload.deliveryId));
      },
    } as unknown as TypedQueue<"outbound">;
    const scheduler = schedulerWith({ queue: held });
    const job = await createJob({ schedule: { kind: "every", every_ms: 1_000 } });
    scheduler.start();
    try {
      for (let second = 1; second <= 5; second++) {
        clock.set(`2026-01-09T12:00:0${second}.500Z`);
        await waitFor(async () => (await runs(job.id)).length === second || undefined, 10_000, `slot ${second} to fire`, 20);
      }
      expect(added).toEqual([]);
    } finally {
      open();
      await scheduler.stop();
    }
    const fired = await runs(job.id);
    expect(fired.map((r) => r.status)).toEqual(["running", "running", "running", "running", "running"]);
    // Every fire's delivery was enqueued once the gate opened, before stop() returned (the
    // jobs an earlier test left fired beside it).
    const mine = fired.flatMap((r) => r.deliveryIds);
    expect(mine).toHaveLength(5);
    expect(added.filter((id) => mine.includes(id)).sort()).toEqual([...mine].sort());
    await jobs.delete(job.id);
  });
});
