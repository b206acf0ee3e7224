import { parseArgs } from "node:util";
import type { TaskList, TaskStopped, TaskView } from "@nahida/contracts";
import type { ApiRequest } from "./api.client";
import { idArgument, wholeNumber } from "./cli-args";
import { UsageError } from "./usage-error";

export const TASKS_USAGE = `  tasks list <session id> [--limit N] [--json]
                                  a session's sub-agent tasks, newest first
  tasks show <task id> [--json]   one task: status, result or error, who took the result, tokens
  tasks stop <task id> [--json]   stop a queued or running task (cancelled; its parent is told once)`;

function taskListText(list: TaskList): string {
  if (list.tasks.length === 0) return "no tasks";
  const rows = [["ID", "STATUS", "LABEL", "TAKEN BY", "CREATED"], ...list.tasks.map((t) => [t.task_id, t.status, t.label ?? "-", t.consumed_by ?? "-", t.created_at])];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ")).join("\n");
}

function taskText(t: TaskView): string {
  return [
    `id:        ${t.task_id}`,
    `status:    ${t.status}${t.consumed_by ? ` (result taken by: ${t.consumed_by})` : ""}`,
    `label:     ${t.label ?? "-"}`,
    `parent:    session ${t.parent_session_id}, run ${t.parent_run_id}`,
    `child:     session ${t.child_session_id}`,
    `task:      ${t.task}`,
    `tokens:    ${t.input_tokens} in, ${t.output_tokens} out`,
    `timeout:   ${t.timeout_seconds} s${t.deadline_at ? ` (deadline ${t.deadline_at})` : ""}`,
    `created:   ${t.created_at}`,
    `finished:  ${t.finished_at ?? "-"}`,
    ...(t.result !== null ? [`result:    ${t.result}`] : []),
    ...(t.error !== null ? [`error:     ${t.error}`] : []),
  ].join("\n");
}

/** `nahida tasks ...`: the /api/tasks routes. */
export async function tasksCommand(api: ApiRequest, [sub, ...args]: string[]): Promise<unknown> {
  switch (sub) {
    case "list": {
      const id = idArgument(args, "tasks list needs a session id");
      const { values } = parseArgs({ args: args.slice(1), options: { limit: { type: "string" }, json: { type: "boolean" } } });
      const query = values.limit ? `?limit=${wholeNumber(values.limit, "--limit")}` : "";
      const list = await api<TaskList>("GET", `/api/sessions/${id}/tasks${query}`);
      return values.json ? list : taskListText(list);
    }
    case "show": {
      const id = idArgument(args, "tasks show needs a task id");
      const { values } = parseArgs({ args: args.slice(1), options: { json: { type: "boolean" } } });
      const task = await api<TaskView>("GET", `/api/tasks/${id}`);
      return values.json ? task : taskText(task);
    }
    case "stop": {
      const id = idArgument(args, "tasks stop needs a task id");
      const { values } = parseArgs({ args: args.slice(1), options: { json: { type: "boolean" } } });
      const stopped = await api<TaskStopped>("POST", `/api/tasks/${id}/stop`);
      if (values.json) return stopped;
      return stopped.stopped ? `task ${stopped.task_id} stopped` : `task ${stopped.task_id} had already ended: ${stopped.status}`;
    }
    default:
      throw new UsageError(sub ? `unknown tasks command ${JSON.stringify(sub)}` : "tasks needs a command: list, show or stop");
  }
}
