import { z } from "zod";

/**
 * How a lane treats messages that arrive while a run is in progress.
 * - `collect` (default): the next run takes all of them together.
 * - `followup`: one run per message, in order.
 */
export const LaneMode = z.enum(["collect", "followup"]);
export type LaneMode = z.infer<typeof LaneMode>;

export const LaneItemKind = z.enum(["inbound", "event"]);
export type LaneItemKind = z.infer<typeof LaneItemKind>;
