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
