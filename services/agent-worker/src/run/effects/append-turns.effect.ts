import type { NewTurn } from "@nahida/db";
import { EffectStage, defineEffect } from "./effect";

export interface AppendTurns {
  sessionId: string;
  turns: NewTurn[];
}

/** Groups turns by session, keeping their order (a session's turns are one INSERT, so `seq` follows it). */
function bySession(values: readonly AppendTurns[]): Map<string, NewTurn[]> {
  const grouped = new Map<string, NewTurn[]>();
  for (const { sessionId, turns } of values) {
    const list = grouped.get(sessionId) ?? [];
    list.push(...turns);
    grouped.set(sessionId, list);
  }
  return grouped;
}

/** Turns of the run's sessions, and each session's last activity (a session touched with no turns too). */
export const appendTurnsEffect = defineEffect<AppendTurns>({
  name: "append_turns",
  stage: EffectStage.turns,
  async write(values, tx, env) {
    for (const [sessionId, turns] of bySession(values)) {
      if (turns.length > 0) await env.turns.append(sessionId, turns, tx, { touchSession: env.now });
      else await env.sessions.touch(sessionId, env.now, tx);
    }
  },
  parts(values, env) {
    return { parts: [...bySession(values)].flatMap(([sessionId, turns]) => env.turns.appendParts(sessionId, turns, env.now)) };
  },
});
