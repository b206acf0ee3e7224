import type { Cluster, Redis } from "ioredis";
import { encodeLaneItem, taskLaneKey, type AgentRunExecutor } from "@nahida/contracts";
import { Prisma, laneAppendCtes, type Tx } from "@nahida/db";
import { interruptLane } from "@nahida/lanes";

export interface LocalExecutorOptions {
  /** Publishes the interrupt that aborts a child's run wherever it runs. */
  redis: Redis | Cluster;
  prefix: string;
}

/**
 * Runs a task in this deployment's lanes: its `subagent_task` item goes into the child
 * session's own lane in the transaction that starts the task (continuing the spawn's
 * trace), and any agent worker takes it like any lane, a dead one's taken over like any
 * lane. Stopping interrupts the lane's run in progress.
 */
export function localExecutor(o: LocalExecutorOptions): AgentRunExecutor<Tx> {
  return {
    name: "local",
    async start(task, tx, traceparent) {
      const laneKey = taskLaneKey(task);
      const item = encodeLaneItem({ kind: "subagent_task", taskId: task.id });
      await tx.$queryRaw`WITH ${laneAppendCtes({ laneKey, kind: item.kind, refId: Prisma.sql`${item.refId}::text`, traceparent })} SELECT 1`;
      return { wake: [laneKey] };
    },
    async stop(task) {
      await interruptLane(o.redis, o.prefix, taskLaneKey(task));
    },
  };
}
