// A lane worker process for the multi-process lane tests: the real LaneRuntime over the
// real Postgres and Redis, with the recording test handler. Configured by the environment
// the test passes in; prints "ready" once consuming.
import { hostname } from "node:os";
import { recoveryTimings } from "@nahida/contracts";
import { createDatabase } from "@nahida/db";
import { LaneRuntime } from "@nahida/lanes";
import { TypedQueue, createRedis } from "@nahida/queue";
import { createTestHandler } from "./lane-test-handler";

const env = process.env;
const required = (name: string): string => {
  const value = env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const workerId = `${hostname()}:${process.pid}`;
const db = createDatabase({ url: required("DATABASE_URL"), poolSize: Number(env.LANE_POOL_SIZE ?? 6) });
const redis = createRedis({ url: required("REDIS_URL") });
const blocking = createRedis({ url: required("REDIS_URL"), blocking: true });
const prefix = required("NAHIDA_QUEUE_PREFIX");
const wakeQueue = new TypedQueue("lanes", { connection: redis, prefix });
const log = (level: string) => (obj: object, msg?: string) => {
  if (level !== "info") process.stderr.write(`${level} ${msg ?? ""} ${JSON.stringify(obj)}\n`);
};

const runtime = new LaneRuntime({
  db,
  wakeQueue,
  consumerConnection: blocking,
  prefix,
  workerId,
  concurrency: Number(env.LANE_CONCURRENCY ?? 16),
  timings: { ...recoveryTimings(Number(env.LANE_LEASE_MS ?? 10_000)), ...(env.LANE_SWEEP_MS ? { laneSweepMs: Number(env.LANE_SWEEP_MS) } : {}) },
  handler: createTestHandler({ redis, prefix, workerId, maxWorkMs: Number(env.LANE_MAX_WORK_MS ?? 10) }),
  logger: { info: log("info"), warn: log("warn"), error: log("error") },
});
runtime.start();
process.stdout.write("ready\n");

process.on("SIGTERM", async () => {
  await runtime.close();
  await wakeQueue.close();
  await db.close();
  redis.disconnect();
  blocking.disconnect();
  process.exit(0);
});
