import type { BackgroundTaskRepository, CronRepository, SessionEventRepository, SessionRepository } from "@nahida/db";
import { agentEventKind } from "./agent-event.kind";
import { inboundKind, type InboundKindOptions } from "./inbound.kind";
import type { LaneKind } from "./lane-kind";
import { scheduledTurnKind } from "./scheduled-turn.kind";
import { subagentResultKind, subagentResumeKind } from "./subagent-result.kind";
import { subagentTaskKind } from "./subagent-task.kind";

export { defineLaneKind, LaneKinds, type KindItem, type LaneKind } from "./lane-kind";

export interface BuiltinKindsOptions extends InboundKindOptions {
  cron: CronRepository;
  events: SessionEventRepository;
  sessions: SessionRepository;
  tasks: BackgroundTaskRepository;
}

/** The lane item kinds of contracts, all of which this worker handles. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind has its own row type
export function builtinLaneKinds(o: BuiltinKindsOptions): LaneKind<any>[] {
  return [inboundKind(o), agentEventKind(o), scheduledTurnKind(o), subagentTaskKind(o), subagentResultKind(o), subagentResumeKind(o)];
}
