import type { BackgroundTask } from "@nahida/contracts";
import type { BackgroundTaskRepository, NewTurn } from "@nahida/db";
import { RunStoppedError } from "@nahida/lanes";
import { unanswered } from "../agent-call";
import { taskLedgerEffect } from "../effects/task-ledger.effect";
import type { Run } from "../run";
import { defineLaneKind, type KindItem } from "./lane-kind";
import { loadTasks } from "./task-rows";

export interface SubagentTaskKindOptions {
  tasks: BackgroundTaskRepository;
}

/** The child's first turn: its task, how to go about it, and a forked conversation if it asked for one. */
function taskPrompt(task: BackgroundTask): NewTurn {
  const parts = [task.task];
  if (task.instructions) parts.push(`Instructions:\n${task.instructions}`);
  if (task.forkContext) parts.push(`The conversation you were started from (most recent last):\n${task.forkContext}`);
  return {
    role: "event",
    content: parts.join("\n\n"),
    source: `agent:${task.parentRunId}`,
    metadata: { kind: "subagent_task", task_id: task.id, label: task.label, parent_session_id: task.parentSessionId },
  };
}

/**
 * A sub-agent's task, in its child session's lane: the child's agent works on it with the
 * tools it was given, and its end is written in this run's commit as the task's terminal
 * state (from the runtime: the model's text is only the result) together with the result
 * item in the parent's lane. A task that ended meanwhile (stopped, timed out) is not run,
 * and a run stopped for that reason leaves the outcome that stopped it.
 */
export function subagentTaskKind(o: SubagentTaskKindOptions) {
  async function runTask(run: Run, item: KindItem<BackgroundTask>): Promise<void> {
    const task = item.row;
    if (task.childSessionId !== run.scope.session.id) {
      run.reject(item.itemId, `task ${task.id} belongs to session ${task.childSessionId}, not to lane ${run.lane.laneKey}`);
      return;
    }
    if (task.status !== "running") return;
    const answer = await run.callAgent(task.childSessionId, [taskPrompt(task)], { allowedTools: task.tools });
    if (run.lane.signal.reason instanceof RunStoppedError) return;
    const failed = unanswered(answer);
    const tokens = { ...run.usage };
    run.uow.emit(taskLedgerEffect, {
      op: "finish",
      // Its own run: nothing to abort (a run after it in this lane must not be).
      abort: false,
      ids: [task.id],
      outcome: failed !== null ? { status: "failed", error: failed, tokens } : { status: "succeeded", result: answer.kind === "text" ? answer.text : "", tokens },
    });
  }

  return defineLaneKind<BackgroundTask>({
    kind: "subagent_task",
    load: (refIds) => loadTasks(o.tasks, refIds),
    async handle(items, run) {
      for (const item of items) await runTask(run, item);
    },
  });
}
