import { err, ok } from "@nahida/contracts";
import type { BackgroundTaskRepository } from "@nahida/db";

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The tasks the sub-agent kinds' items name, in one read; a ref that names none fails its item with the reason. */
export async function loadTasks(tasks: BackgroundTaskRepository, refIds: readonly string[]) {
  const found = new Map((await tasks.getMany(refIds.filter((id) => UUID.test(id)))).map((t) => [t.id, t]));
  return new Map(refIds.map((id) => [id, found.has(id) ? ok(found.get(id)!) : err(`task ${JSON.stringify(id.slice(0, 64))} does not exist (its session was deleted)`)]));
}
