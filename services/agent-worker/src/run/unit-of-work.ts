import type { FencedPart, Tx } from "@nahida/db";
import type { AfterCommit, EffectEnv, EffectKind } from "./effects/effect";

interface Emitted {
  kind: EffectKind<unknown>;
  value: unknown;
}

/** Effects set aside until `keep()` adds them to the run (a tool's, once its agent call returned). */
export interface HeldEffects {
  emit<V>(kind: EffectKind<V>, value: V): void;
  /** The values of `kind` held so far, in order. */
  values<V>(kind: EffectKind<V>): V[];
  keep(): void;
}

/**
 * The unit of work of one run: every effect it will have, in the order emitted. Nothing is
 * in Postgres until {@link commit} writes them in the lane's fenced transaction, or
 * {@link parts} turns them into one statement. What the run has done so far (its pending
 * turns, its new session) is read back from the effects, never kept beside them.
 */
export class UnitOfWork {
  private effects: Emitted[] = [];

  emit<V>(kind: EffectKind<V>, value: V): void {
    this.effects.push({ kind: kind as EffectKind<unknown>, value });
  }

  /** The values emitted of `kind`, in order. */
  values<V>(kind: EffectKind<V>): V[] {
    return this.effects.filter((e) => e.kind === kind).map((e) => e.value as V);
  }

  /** Drops emitted values of `kind` that `match` (`/reset` drops the turns this run added). */
  discard<V>(kind: EffectKind<V>, match: (value: V) => boolean): void {
    this.effects = this.effects.filter((e) => e.kind !== kind || !match(e.value as V));
  }

  hold(): HeldEffects {
    const held: Emitted[] = [];
    return {
      emit: (kind, value) => void held.push({ kind: kind as EffectKind<unknown>, value }),
      values: <V>(kind: EffectKind<V>) => held.filter((e) => e.kind === kind).map((e) => e.value as V),
      keep: () => void this.effects.push(...held.splice(0)),
    };
  }

  /**
   * The commit as parts of one statement, when every kind emitted has parts for its values;
   * null when one needs the transaction ({@link commit}).
   */
  parts(env: EffectEnv): { parts: FencedPart[]; after: AfterCommit } | null {
    const parts: FencedPart[] = [];
    const after: AfterCommit = { deliveryIds: [], wake: [], stopTasks: [], endedTasks: [] };
    for (const [kind, values] of this.byKind()) {
      const written = kind.parts?.(values, env) ?? null;
      if (written === null) return null;
      parts.push(...written.parts);
      merge(after, written.after);
    }
    return { parts, after };
  }

  /** Writes every effect in `tx` (the run's fenced transaction), kind by kind in stage order. */
  async commit(tx: Tx, env: EffectEnv): Promise<AfterCommit> {
    const after: AfterCommit = { deliveryIds: [], wake: [], stopTasks: [], endedTasks: [] };
    for (const [kind, values] of this.byKind()) merge(after, (await kind.write(values, tx, env)) ?? undefined);
    return after;
  }

  /** Kinds in stage order (ties: the first emitted first), each with its values in order. */
  private byKind(): [EffectKind<unknown>, unknown[]][] {
    const groups = new Map<EffectKind<unknown>, unknown[]>();
    const names = new Map<string, EffectKind<unknown>>();
    for (const { kind, value } of this.effects) {
      const named = names.get(kind.name);
      if (named && named !== kind) throw new Error(`two effect kinds are named ${kind.name}`);
      names.set(kind.name, kind);
      const values = groups.get(kind) ?? [];
      values.push(value);
      groups.set(kind, values);
    }
    return [...groups].sort(([a], [b]) => a.stage - b.stage);
  }
}

function merge(into: AfterCommit, from: Partial<AfterCommit> | undefined): void {
  if (from?.deliveryIds) into.deliveryIds.push(...from.deliveryIds);
  if (from?.wake) into.wake.push(...from.wake);
  if (from?.stopTasks) into.stopTasks.push(...from.stopTasks);
  if (from?.endedTasks) into.endedTasks.push(...from.endedTasks);
}
