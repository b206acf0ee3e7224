import { EffectStage, defineEffect } from "./effect";

/** How a scheduled turn ended, written to its cron run (the scheduler reads it from there). */
export interface CronRunOutcome {
  cronRunId: string;
  status: "succeeded" | "failed";
  sessionId: string;
  deliveryIds?: string[];
  error?: string;
}

export const finishCronRunEffect = defineEffect<CronRunOutcome>({
  name: "finish_cron_run",
  stage: EffectStage.cronOutcomes,
  async write(values, tx, env) {
    for (const o of values) {
      await env.cron.recordTurnOutcome(o.cronRunId, { outcome: o.status, sessionId: o.sessionId, deliveryIds: o.deliveryIds ?? [], error: o.error ?? null }, tx);
    }
  },
});
