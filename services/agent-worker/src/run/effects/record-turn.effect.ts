import type { NewTurn } from "@nahida/db";
import { EffectStage, defineEffect } from "./effect";

/**
 * A turn written into another session's history (a tool's message recorded there). Not
 * under that session's lane lock: this commit holds its own lane, and two runs writing into
 * each other's sessions would deadlock. An event that lands between another run's tool call
 * and its result is moved after the result when the context is built.
 */
export const recordTurnEffect = defineEffect<{ sessionId: string; turn: NewTurn }>({
  name: "record_turn",
  stage: EffectStage.records,
  async write(values, tx, env) {
    for (const { sessionId, turn } of values) {
      if (!(await env.sessions.get(sessionId, tx))) throw new Error(`session ${sessionId} vanished before the run committed`);
      await env.turns.append(sessionId, [turn], tx);
    }
  },
});
