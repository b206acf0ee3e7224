import { EffectStage, defineEffect } from "./effect";

/** `/reset`: the session's stored turns and its compaction checkpoints are deleted before this run's own turns go in. */
export const clearHistoryEffect = defineEffect<{ sessionId: string }>({
  name: "clear_history",
  stage: EffectStage.history,
  async write(values, tx, env) {
    for (const { sessionId } of values) {
      await env.turns.clear(sessionId, tx);
      await env.compactions.clear(sessionId, tx);
    }
  },
});
