/** What a readiness check answers: ready, or why not (shown to whoever probes, so never a secret). */
export type Readiness = { ok: true } | { ok: false; reason: string };

/** One named check of a readiness endpoint (`postgres`, `redis`, `delivery`). */
export interface ReadinessProbe {
  name: string;
  check(): Promise<Readiness> | Readiness;
}

export const READY: Readiness = { ok: true };
export const notReady = (reason: string): Readiness => ({ ok: false, reason });
