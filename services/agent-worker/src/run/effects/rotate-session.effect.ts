import { EffectStage, defineEffect } from "./effect";

/** `/new`: a fresh session for the chat, made its current one; the old one stays in history. */
export const rotateSessionEffect = defineEffect<{ sessionId: string; address: string; channel: string }>({
  name: "rotate_session",
  stage: EffectStage.sessions,
  async write(values, tx, env) {
    for (const s of values) await env.sessions.rotate(s.address, s.channel, tx, s.sessionId);
  },
});
