import { err, isTerminalTask, ok, type BackgroundTask, type SubagentResultMetadata, type TaskConsumer } from "@nahida/contracts";
import type { BackgroundTaskRepository, NewTurn } from "@nahida/db";
import { unanswered } from "../agent-call";
import { taskLedgerEffect, taskLedgerState } from "../effects/task-ledger.effect";
import type { Run } from "../run";
import { defineLaneKind, type KindItem } from "./lane-kind";
import { UUID, loadTasks } from "./task-rows";

export interface SubagentResultKindOptions {
  tasks: BackgroundTaskRepository;
}

/** A result as the parent's event turn; the status is the runtime's. */
function resultTurn(task: BackgroundTask, by: TaskConsumer): NewTurn {
  const metadata: SubagentResultMetadata = { kind: "subagent_result", task_id: task.id, label: task.label, status: task.status, child_session_id: task.childSessionId, consumed_by: by };
  const content = task.status === "succeeded" ? task.result || "(it finished without a result)" : `${task.status}: ${task.error ?? "no reason recorded"}`;
  return { role: "event", content, source: `subagent:${task.id}`, metadata };
}

/** Takes results for the run: each once, recorded in its commit, told to its parent session in one agent call per session. */
function resultTaker(run: Run) {
  // What this run did to tasks so far; `taken` grows as this kind takes results.
  const state = taskLedgerState(run.uow.values(taskLedgerEffect));
  /** Turns to tell each parent session, in the order their results are taken. */
  const tell = new Map<string, NewTurn[]>();
  return {
    state,
    take(tasks: BackgroundTask[], by: TaskConsumer): void {
      const fresh = tasks.filter((t) => !state.taken.has(t.id));
      if (fresh.length === 0) return;
      for (const t of fresh) state.taken.add(t.id);
      run.uow.emit(taskLedgerEffect, { op: "consume", ids: fresh.map((t) => t.id), by });
      if (by === "discarded") return;
      // Each result to its own parent session (a lane's sessions: the chat's current and older ones).
      for (const t of fresh) tell.set(t.parentSessionId, [...(tell.get(t.parentSessionId) ?? []), resultTurn(t, by)]);
    },
    /** One agent call per parent session with every result taken; its answer to the run's output. */
    async report(): Promise<void> {
      for (const [sessionId, turns] of tell) {
        const answer = await run.callAgent(sessionId, turns);
        const error = unanswered(answer);
        if (error !== null) run.logger.warn({ laneKey: run.lane.laneKey, sessionId, err: error }, "a sub-agent's result was recorded but not answered");
        if (answer.kind === "text") run.answer({ text: answer.text }, { source: "agent", sessionId });
      }
    },
  };
}

/**
 * A finished sub-agent's result, in its parent's lane: taken here exactly once, by one of
 * - nobody, when an `agent_wait` already took it (in the commit of the run that waited),
 *   or no committed parent run owns the task (`discarded`);
 * - the parent's resume, when the parent yielded for it: once every task of that yield
 *   has ended, one turn with all their results;
 * - otherwise an announce turn of its own.
 * The parent's agent may answer its output (its chat) or stay silent (`NO_REPLY`).
 */
export function subagentResultKind(o: SubagentResultKindOptions) {
  /** The yield `task` waits in, with the rest of its tasks; null when its parent did not yield for it. */
  async function yieldGroup(task: BackgroundTask, state: ReturnType<typeof taskLedgerState>): Promise<BackgroundTask[] | null> {
    // A yield of this run covers every owned result of the session nobody took (as its commit will write it).
    if (state.yielded.has(task.parentSessionId)) {
      const open = await o.tasks.unconsumedOf(task.parentSessionId);
      return open.filter((t) => (t.adopted || state.adopted.has(t.id)) && !state.taken.has(t.id));
    }
    if (task.yieldId === null) return null;
    return (await o.tasks.yieldGroup(task.yieldId)).filter((t) => !state.taken.has(t.id));
  }

  return defineLaneKind<BackgroundTask>({
    kind: "subagent_result",
    load: (refIds) => loadTasks(o.tasks, refIds),
    async handle(items: readonly KindItem<BackgroundTask>[], run) {
      const taker = resultTaker(run);
      for (const { itemId, row: task } of items) {
        if (task.parentLaneKey !== run.lane.laneKey) {
          run.reject(itemId, `task ${task.id} reports to lane ${task.parentLaneKey}, not ${run.lane.laneKey}`);
          continue;
        }
        if (task.consumedBy !== null || taker.state.taken.has(task.id) || !isTerminalTask(task.status)) continue;
        if (!task.adopted && !taker.state.adopted.has(task.id)) {
          taker.take([task], "discarded");
          continue;
        }
        const group = await yieldGroup(task, taker.state);
        if (group === null) taker.take([task], "announce");
        // The rest of the yield is still running: this result waits for them. The last one to
        // end resumes the parent with all; if it is taken another way, that commit appends a
        // `subagent_resume` item instead (task_ledger effect).
        else if (group.every((t) => isTerminalTask(t.status))) taker.take(group, "resume");
      }
      await taker.report();
    },
  });
}

/**
 * A yield with nothing left to resume it: all its tasks ended, and the last result item came
 * before the last of them was taken another way (inline, or stopped). Resumes the parent
 * with every result of the yield nobody took, once.
 */
export function subagentResumeKind(o: SubagentResultKindOptions) {
  return defineLaneKind<BackgroundTask[]>({
    kind: "subagent_resume",
    async load(refIds) {
      const read = async (id: string) => (UUID.test(id) ? ok(await o.tasks.yieldGroup(id)) : err(`${JSON.stringify(id.slice(0, 64))} is not a yield id`));
      return new Map(await Promise.all(refIds.map(async (id) => [id, await read(id)] as const)));
    },
    async handle(items, run) {
      const taker = resultTaker(run);
      for (const { row } of items) {
        const group = row.filter((t) => t.parentLaneKey === run.lane.laneKey && !taker.state.taken.has(t.id));
        if (group.length > 0 && group.every((t) => isTerminalTask(t.status))) taker.take(group, "resume");
      }
      await taker.report();
    },
  });
}
