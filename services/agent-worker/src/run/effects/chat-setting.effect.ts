import type { LaneMode, TriggerMode } from "@nahida/contracts";
import { laneKeyForChat } from "@nahida/db";
import { EffectStage, defineEffect } from "./effect";

/** A chat setting a command changed: `/trigger`, `/send`, `/queue`. */
export type ChatSetting =
  | { setting: "trigger_mode"; address: string; value: TriggerMode }
  | { setting: "send_override"; address: string; value: "allow" | "deny" | null }
  | { setting: "queue_mode"; address: string; value: LaneMode };

/** Chat settings, in the order set (the last one of a setting wins). The queue mode is the chat lane's mode. */
export const chatSettingEffect = defineEffect<ChatSetting>({
  name: "chat_setting",
  stage: EffectStage.chat,
  async write(values, tx, env) {
    for (const change of values) {
      switch (change.setting) {
        case "trigger_mode":
          await env.sessions.setTriggerMode(change.address, change.value, tx);
          break;
        case "send_override":
          await env.sessions.setChatSendPolicy(change.address, change.value, tx);
          break;
        case "queue_mode":
          await env.lanes.setMode(laneKeyForChat(change.address), change.value, tx);
          break;
        default: {
          const unreachable: never = change;
          throw new Error(`unknown chat setting ${JSON.stringify(unreachable)}`);
        }
      }
    }
  },
});
