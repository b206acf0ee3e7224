import type { NewSessionEvent } from "@nahida/db";
import { EffectStage, defineEffect } from "./effect";

/**
 * An event into another session (`sessions_send`, a chatless session's answer to its
 * output): its row, and its turn or lane item; the target lane is woken after the commit.
 */
export const sendEventEffect = defineEffect<NewSessionEvent>({
  name: "send_event",
  stage: EffectStage.events,
  async write(values, tx, env) {
    const wake: string[] = [];
    // A deadlock with a commit enqueueing the other way is handed back uncounted by the lane
    // runtime (`isConflictAbort`); ordering here could not prevent it, as the own lane is locked first.
    for (const event of values) {
      const written = await env.sessionEvents.write(event, tx);
      // Checked when asked for; a session deleted since takes its event with it.
      if (written.ok && written.value.wake) wake.push(written.value.wake);
    }
    return { wake };
  },
});
