import { Queue, Worker } from "bullmq";
import { createRedis } from "@nahida/queue";
import { percentile } from "./latency";
import { processCpuMs } from "./proc-cpu";

export interface RawTwoHopOptions {
  redisUrl: string;
  prefix: string;
  /** Consumer concurrency of each hop. */
  concurrency: number;
}

export interface RawBurstResult {
  jobs: number;
  jobsPerSecond: number;
  /** CPU of the bench process (producer and both consumers) per job, in ms. */
  cpuMsPerJob: number;
}

export interface RawPacedResult {
  rate: number;
  jobs: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * The raw BullMQ floor under the pipeline: a producer adds to queue A, a worker consumes
 * A and adds to B, a worker consumes B. Everything in the bench process, on the same Redis,
 * with no Postgres at all.
 */
export async function startRawTwoHop(options: RawTwoHopOptions) {
  const connection = createRedis({ url: options.redisUrl });
  const blockingA = createRedis({ url: options.redisUrl, blocking: true });
  const blockingB = createRedis({ url: options.redisUrl, blocking: true });
  const queueA = new Queue("raw-a", { connection, prefix: options.prefix });
  const queueB = new Queue("raw-b", { connection, prefix: options.prefix });
  const jobOptions = { removeOnComplete: true, removeOnFail: true };
  let onDone: (seq: number) => void = () => undefined;
  const hopA = new Worker(
    "raw-a",
    async (job) => {
      await queueB.add("hop", job.data, jobOptions);
    },
    { connection: blockingA, prefix: options.prefix, concurrency: options.concurrency },
  );
  const hopB = new Worker(
    "raw-b",
    async (job) => {
      onDone((job.data as { seq: number }).seq);
    },
    { connection: blockingB, prefix: options.prefix, concurrency: options.concurrency },
  );
  await Promise.all([hopA.waitUntilReady(), hopB.waitUntilReady()]);

  async function burst(jobs: number, inFlight: number): Promise<RawBurstResult> {
    let done = 0;
    const finished = new Promise<void>((resolve) => {
      onDone = () => {
        if (++done === jobs) resolve();
      };
    });
    const cpuBefore = processCpuMs(process.pid)!;
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < jobs) {
          const seq = next++;
          await queueA.add("hop", { seq }, jobOptions);
        }
      }),
    );
    await finished;
    const elapsedMs = performance.now() - started;
    const cpuMs = processCpuMs(process.pid)! - cpuBefore;
    return { jobs, jobsPerSecond: (jobs * 1000) / elapsedMs, cpuMsPerJob: cpuMs / jobs };
  }

  async function paced(rate: number, seconds: number): Promise<RawPacedResult> {
    const jobs = Math.max(1, Math.round(rate * seconds));
    const addedAt: number[] = [];
    const latencies: number[] = [];
    const finished = new Promise<void>((resolve) => {
      onDone = (seq) => {
        latencies.push(performance.now() - addedAt[seq]!);
        if (latencies.length === jobs) resolve();
      };
    });
    const t0 = performance.now();
    for (let seq = 0; seq < jobs; seq++) {
      const due = t0 + (seq * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      addedAt[seq] = performance.now();
      void queueA.add("hop", { seq }, jobOptions);
    }
    await finished;
    latencies.sort((a, b) => a - b);
    return { rate, jobs, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
  }

  return {
    burst,
    paced,
    async close() {
      await Promise.all([hopA.close(), hopB.close()]);
      await Promise.all([queueA.close(), queueB.close()]);
      for (const c of [connection, blockingA, blockingB]) c.disconnect();
    },
  };
}
