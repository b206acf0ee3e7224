import { EffectStage, defineEffect } from "./effect";

/** How the run answered an agent event of its lane, recorded on the event for its sender. */
export interface EventOutcome {
  eventId: string;
  status: "done" | "failed";
  reply: string | null;
  error: string | null;
}

export const finishEventEffect = defineEffect<EventOutcome>({
  name: "finish_event",
  stage: EffectStage.eventOutcomes,
  async write(values, tx, env) {
    for (const { eventId, ...outcome } of values) await env.events.finish(eventId, { ...outcome, runId: env.runId, at: env.now }, tx);
  },
});
