import { z } from "zod";

/**
 * How a lane treats messages that arrive while a run is in progress.
 * - `collect` (default): the next run takes all of them together.
 * - `followup`: one run per message, in order.
 * - `interrupt`: a new message aborts the run in progress (which commits nothing) and the
 *   next run takes it together with every message that run had: answered once, together.
 */
export const LaneMode = z.enum(["collect", "followup", "interrupt"]);
export type LaneMode = z.infer<typeof LaneMode>;

/**
 * What a lane item asks the agent worker to do. A lane row stores it as `(kind, ref_id)`:
 * the kind names the union member, the ref the row it points at.
 * - `inbound`: a stored platform message (`inbound_messages.id`);
 * - `agent_event`: an event another session or an operator put into this session;
 * - `scheduled_turn`: a cron job's agent turn (a `cron_runs` row);
 * - `subagent_task`: a sub-agent's task, in its child session's lane (`background_tasks.id`);
 * - `subagent_result`: a finished sub-agent task reported to its parent (`background_tasks.id`);
 * - `subagent_resume`: a yield whose tasks have all ended without a result item to resume it
 *   (the last of them was taken inline or stopped): resumes the parent (the yield id).
 */
export const LaneItemKind = z.enum(["inbound", "agent_event", "scheduled_turn", "subagent_task", "subagent_result", "subagent_resume"]);
export type LaneItemKind = z.infer<typeof LaneItemKind>;

export type LaneItem =
  | { kind: "inbound"; inboundMessageId: string }
  | { kind: "agent_event"; eventId: string }
  | { kind: "scheduled_turn"; cronRunId: string }
  | { kind: "subagent_task"; taskId: string }
  | { kind: "subagent_result"; taskId: string }
  | { kind: "subagent_resume"; yieldId: string };

/** A lane item as the lane stores it. */
export interface LaneItemRef {
  kind: LaneItemKind;
  refId: string;
}

export function encodeLaneItem(item: LaneItem): LaneItemRef {
  switch (item.kind) {
    case "inbound":
      return { kind: item.kind, refId: item.inboundMessageId };
    case "agent_event":
      return { kind: item.kind, refId: item.eventId };
    case "scheduled_turn":
      return { kind: item.kind, refId: item.cronRunId };
    case "subagent_task":
    case "subagent_result":
      return { kind: item.kind, refId: item.taskId };
    case "subagent_resume":
      return { kind: item.kind, refId: item.yieldId };
    default: {
      const unreachable: never = item;
      return unreachable;
    }
  }
}
