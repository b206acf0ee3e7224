import { encodeLaneItem, type TaskConsumer, type TaskRef, type TerminalTaskStatus } from "@nahida/contracts";
import type { TaskOutcome } from "@nahida/db";
import { EffectStage, defineEffect } from "./effect";

/**
 * What a run does to its sub-agent tasks:
 * - `adopt`: this run owns the tasks it spawned or found again (a retried run);
 * - `consume`: it took these results (`agent_wait` inline, a resume, an announce);
 * - `yield`: every result of the session's tasks nobody took yet waits to resume it together
 *   (`yieldId`: one per run and session, so two sessions yielding in one run stay apart);
 * - `finish`: it ended these tasks (`agent_stop`, `/stop`, a child's own end); `abort: false`
 *   leaves their lanes alone (a child ending its own task in its own run).
 * Every write is conditional on the state it changes (docs/subagents.md), so a result is
 * taken once and a task ends once whoever else gets there.
 */
export type TaskLedgerOp =
  | { op: "adopt"; ids: string[] }
  | { op: "consume"; ids: string[]; by: TaskConsumer }
  | { op: "yield"; sessionId: string; yieldId: string }
  | { op: "finish"; ids: string[]; outcome: TaskOutcome; abort?: boolean };

/**
 * What these ops do to tasks, read back by a run before its commit (the tools, the result
 * kinds): the tasks it owns, the results it took or silenced, the sessions it yielded.
 */
export function taskLedgerState(ops: readonly TaskLedgerOp[]) {
  return {
    adopted: new Set(ops.flatMap((op) => (op.op === "adopt" ? op.ids : []))),
    taken: new Set(ops.flatMap((op) => (op.op === "consume" || (op.op === "finish" && op.outcome.consumedBy) ? op.ids : []))),
    yielded: new Set(ops.flatMap((op) => (op.op === "yield" ? [op.sessionId] : []))),
  };
}

export const taskLedgerEffect = defineEffect<TaskLedgerOp>({
  name: "task_ledger",
  stage: EffectStage.tasks,
  async write(values, tx, env) {
    const wake: string[] = [];
    const stopTasks: TaskRef[] = [];
    const endedTasks: TerminalTaskStatus[] = [];
    /** Yields made here: with the tasks taken or stopped here, each may leave a yield with nothing left to resume it. */
    const yielded: string[] = [];
    // Adoptions first: a yield in the same commit covers the children spawned beside it.
    const ops = [...values.filter((v) => v.op === "adopt"), ...values.filter((v) => v.op !== "adopt")];
    for (const value of ops) {
      switch (value.op) {
        case "adopt":
          await env.ledger.tasks.adopt(tx, value.ids);
          break;
        case "consume":
          await env.ledger.tasks.consume(tx, value.ids, value.by, env.runId);
          break;
        case "yield":
          await env.ledger.tasks.yieldFor(tx, value.sessionId, value.yieldId);
          yielded.push(value.yieldId);
          break;
        case "finish": {
          const consumed = value.outcome.consumedBy ? { consumedRunId: env.runId } : {};
          const after = await env.ledger.finishIn(tx, value.ids, { ...value.outcome, ...consumed });
          wake.push(...after.wake);
          endedTasks.push(...after.ended);
          if (value.abort !== false) stopTasks.push(...after.stop);
          if (value.outcome.consumedBy) {
            // A task that ended on its own between the stop and this commit is silenced too.
            await env.ledger.tasks.consume(tx, value.ids, value.outcome.consumedBy, env.runId);
          }
          break;
        }
        default: {
          const unreachable: never = value;
          throw new Error(`unknown task ledger op ${JSON.stringify(unreachable)}`);
        }
      }
    }
    const taken = [...taskLedgerState(values).taken];
    if (taken.length + yielded.length > 0) {
      for (const { yieldId, parentLaneKey } of await env.ledger.tasks.resumableYields(tx, taken, yielded)) {
        const item = encodeLaneItem({ kind: "subagent_resume", yieldId });
        await env.lanes.append(parentLaneKey, item, tx);
        wake.push(parentLaneKey);
      }
    }
    return { wake, stopTasks, endedTasks };
  },
});
