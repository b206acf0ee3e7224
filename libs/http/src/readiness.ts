import type { ReadinessProbe } from "@nahida/contracts";

export interface ReadinessReport {
  /** 200 when every probe passed, 503 otherwise. */
  httpStatus: 200 | 503;
  /** Each probe's name → `ok` or the reason it is not ready. */
  body: { status: "ready" | "not_ready"; checks: Record<string, string> };
}

/** Runs every probe at once; a probe that throws is not ready, with its message as the reason. */
export async function checkReadiness(probes: readonly ReadinessProbe[]): Promise<ReadinessReport> {
  const results = await Promise.all(
    probes.map(async (probe) => {
      try {
        return { name: probe.name, result: await probe.check() };
      } catch (error) {
        return { name: probe.name, result: { ok: false as const, reason: (error as Error).message } };
      }
    }),
  );
  const ready = results.every(({ result }) => result.ok);
  const checks = Object.fromEntries(results.map(({ name, result }) => [name, result.ok ? "ok" : result.reason]));
  return { httpStatus: ready ? 200 : 503, body: { status: ready ? "ready" : "not_ready", checks } };
}
