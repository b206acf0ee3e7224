import { z } from "zod";

/** Where a delivery stands (`deliveries.status`). */
export const DeliveryStatus = z.enum(["queued", "sending", "sent", "failed", "expired"]);
export type DeliveryStatus = z.infer<typeof DeliveryStatus>;

/**
 * When the bot answers in a group (`chats.trigger_mode`): `mention` (addressed by a mention,
 * a reply to the bot or a command) or `always`.
 */
export const TriggerMode = z.enum(["mention", "always"]);
export type TriggerMode = z.infer<typeof TriggerMode>;

/**
 * What a delivery does with a part whose outcome is unknown — its worker died after the
 * platform call began and before the answer was recorded (`deliveries.policy`):
 * `at_least_once` resends it (a duplicate is possible), `at_most_once` skips it (a loss is
 * possible). Either way the part is listed as uncertain.
 */
export const DeliveryPolicy = z.enum(["at_least_once", "at_most_once"]);
export type DeliveryPolicy = z.infer<typeof DeliveryPolicy>;
