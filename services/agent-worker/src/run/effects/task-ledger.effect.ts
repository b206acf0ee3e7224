import type { TaskConsumer } from "@nahida/contracts";
import type { TaskOutcome } from "@nahida/db";
import { EffectStage, defineEffect } from "./effect";

/**
 * What a run does to its sub-agent tasks, in the order it did it:
 * - `adopt`: this run owns the tasks it spawned or found again (a retried run);
 * - `consume`: it took these results (`agent_wait` inline, a resume, an announce);
 * - `yield`: every result of the session's tasks nobody took yet waits to resume it together;
 * - `finish`: it ended these tasks (`agent_stop`, `/stop`, a child's own end).
 * Every write is conditional on the state it changes (docs/subagents.md), so a result is
 * taken once and a task ends once whoever else gets there.
 */
export type TaskLedgerOp =
  | { op: "adopt"; ids: string[] }
  | { op: "consume"; ids: string[]; by: TaskConsumer }
  | { op: "yield"; sessionId: string }
  | { op: "finish"; ids: string[]; outcome: TaskOutcome };

export const taskLedgerEffect = defineEffect<TaskLedgerOp>({
  name: "task_ledger",
  stage: EffectStage.tasks,
  async write(values, tx, env) {
    const wake: string[] = [];
    const stopTasks: { id: string; childSessionId: string }[] = [];
    for (const value of values) {
      switch (value.op) {
        case "adopt":
          await env.ledger.tasks.adopt(tx, value.ids);
          break;
        case "consume":
          await env.ledger.tasks.consume(tx, value.ids, value.by, env.runId);
          break;
        case "yield":
          await env.ledger.tasks.yieldFor(tx, value.sessionId, env.runId);
          break;
        case "finish": {
          const consumed = value.outcome.consumedBy ? { consumedRunId: env.runId } : {};
          const after = await env.ledger.finishIn(tx, value.ids, { ...value.outcome, ...consumed });
          wake.push(...after.wake);
          stopTasks.push(...after.stop);
          break;
        }
        default: {
          const unreachable: never = value;
          throw new Error(`unknown task ledger op ${JSON.stringify(unreachable)}`);
        }
      }
    }
    return { wake, stopTasks };
  },
});
