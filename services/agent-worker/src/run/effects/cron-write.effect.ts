import type { CronCreateRequest, CronUpdateRequest } from "@nahida/contracts";
import type { Tx } from "@nahida/db";
import { EffectStage, defineEffect, type EffectEnv } from "./effect";

/**
 * A cron job write of a tool or command, checked when it was asked for and applied in the
 * commit. A create is prepared again at commit time, so its first slot counts from then.
 */
export type CronWrite =
  | { kind: "create"; jobId: string; request: CronCreateRequest; owner: string }
  | { kind: "update"; jobId: string; request: CronUpdateRequest }
  | { kind: "delete"; jobId: string };

/**
 * One cron write. A write that no longer holds (a job deleted or the quota filled since, an
 * `at` that passed) is dropped, not thrown: the rest of the run's work must not be lost for it.
 */
async function apply(write: CronWrite, tx: Tx, env: EffectEnv): Promise<void> {
  switch (write.kind) {
    case "create": {
      const prepared = env.cronJobs.prepare(write.request, write.owner, write.jobId);
      if (prepared.ok) await env.cron.create(prepared.value, tx);
      return;
    }
    case "update":
      await env.cronJobs.update(write.jobId, write.request, tx);
      return;
    case "delete":
      await env.cronJobs.delete(write.jobId, tx);
      return;
    default: {
      const unreachable: never = write;
      throw new Error(`unknown cron write ${JSON.stringify(unreachable)}`);
    }
  }
}

export const cronWriteEffect = defineEffect<CronWrite>({
  name: "cron_write",
  stage: EffectStage.jobs,
  async write(values, tx, env) {
    for (const write of values) await apply(write, tx, env);
  },
});
