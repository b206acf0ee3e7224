export * from "./agent-worker.env";
export * from "./agent-worker.service";
export * from "./agent/llm.client";
export { defineLaneKind, type KindItem, type LaneKind } from "./run/kinds";
export { defineEffect, EffectStage, type EffectEnv, type EffectKind } from "./run/effects/effect";
export type { Run, AnswerRoute } from "./run/run";
export type { RunOutput, RunScope } from "./run/run-scope";
