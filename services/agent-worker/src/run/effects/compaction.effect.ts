import type { NewCompaction } from "@nahida/db";
import { EffectStage, defineEffect } from "./effect";

/**
 * A history compaction checkpoint (docs/compaction.md), written with the run: a run that
 * does not commit (killed mid-compaction, lost its lease) leaves none behind, and the next
 * run compacts again, once.
 */
export const compactionEffect = defineEffect<NewCompaction>({
  name: "compaction",
  stage: EffectStage.records,
  async write(values, tx, env) {
    for (const value of values) await env.compactions.insert(value, tx);
  },
  parts(values, env) {
    return { parts: values.map((value) => env.compactions.insertPart(value)) };
  },
});
