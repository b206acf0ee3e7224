import type { Clock } from "@nahida/contracts";
import type { ChatRunRead, CompactionRepository, TurnRepository } from "@nahida/db";
import type { LaneHandler, LaneRunContext } from "@nahida/lanes";
import type { Logger } from "@nahida/observability";
import type { AgentCaller } from "./agent-call";
import type { AfterCommit, EffectStores } from "./effects/effect";
import type { KindItem, LaneKind, LaneKinds } from "./kinds";
import { Run } from "./run";
import type { ScopeReader } from "./run-scope";

export interface RunHandlerOptions {
  kinds: LaneKinds;
  scopes: ScopeReader;
  agent: AgentCaller;
  /** What effects write through, and the after-commit enqueue and wake. */
  effects: EffectStores;
  turns: TurnRepository;
  compactions: CompactionRepository;
  historyTurns: number;
  clock: Clock;
  logger: Logger;
}

/** An item of the batch with its kind's handler. */
type Typed = { itemId: string; refId: string; kind: LaneKind<unknown> };

/** The batch's items whose kind this worker handles, in lane order; the rest are rejected with the reason. */
function typeItems(lane: LaneRunContext, kinds: LaneKinds): Typed[] {
  return lane.items.flatMap((item) => {
    const kind = kinds.get(item.kind);
    if (kind.ok) return [{ itemId: item.id, refId: item.refId, kind: kind.value }];
    lane.reject(item.id, kind.error);
    return [];
  });
}

/** Each kind reads its items' rows in one read; items without a usable row are rejected. Lane order is kept. */
async function loadItems(lane: LaneRunContext, typed: Typed[], read: ChatRunRead | null): Promise<(Typed & { row: unknown })[]> {
  const kinds = [...new Set(typed.map((t) => t.kind))];
  const loaded = await Promise.all(kinds.map((kind) => kind.load(typed.filter((t) => t.kind === kind).map((t) => t.refId), read)));
  const rows = new Map(kinds.map((kind, index) => [kind, loaded[index]!]));
  return typed.flatMap((t) => {
    const row = rows.get(t.kind)!.get(t.refId);
    if (row?.ok) return [{ ...t, row: row.value }];
    lane.reject(t.itemId, row ? row.error : `${t.kind.kind} ${t.refId} was not loaded`);
    return [];
  });
}

/** Runs of consecutive items of one kind, in lane order. */
function segments(items: (Typed & { row: unknown })[]): { kind: LaneKind<unknown>; items: KindItem<unknown>[] }[] {
  const out: { kind: LaneKind<unknown>; items: KindItem<unknown>[] }[] = [];
  for (const { kind, itemId, refId, row } of items) {
    const last = out.at(-1);
    if (last?.kind === kind) last.items.push({ itemId, refId, row });
    else out.push({ kind, items: [{ itemId, refId, row }] });
  }
  return out;
}

/**
 * The agent worker's lane handler (docs/run.md): type the batch's items by kind, read the
 * scope and each kind's rows, hand each run of items of one kind to its handler in lane
 * order, and commit the unit of work in the lane's fenced commit: as one statement when
 * every effect has parts, else as a transaction. Deliveries are enqueued and lanes woken
 * after it. A retried run recomputes everything; only the run that commits leaves anything.
 */
export function createRunHandler(o: RunHandlerOptions): LaneHandler {
  return async function handleRun(lane: LaneRunContext): Promise<void> {
    const typed = typeItems(lane, o.kinds);
    const read = await o.scopes.read(lane.laneKey, typed.filter((t) => t.kind.kind === "inbound").map((t) => t.refId));
    const items = await loadItems(lane, typed, read);
    if (items.length === 0) return;
    const scope = await o.scopes.resolve(lane.laneKey, read);
    if (!scope) {
      for (const item of lane.items) lane.reject(item.id, `lane ${lane.laneKey} has no session`);
      return;
    }
    // The history read with the chat (a first session has none), for the first agent call of that session.
    const history = read ? { sessionId: scope.session.id, compaction: read.session ? read.compaction : null, turns: read.session ? read.history : [] } : null;
    const run = new Run(lane, scope, { turns: o.turns, compactions: o.compactions, historyTurns: o.historyTurns, agent: o.agent, logger: o.logger, history });
    for (const segment of segments(items)) await segment.kind.handle(segment.items, run);
    const after = await commit(lane, run, o);
    // After the commit: a crash here leaves queued rows that the delivery sweeper re-enqueues,
    // and lanes that the lane sweeper wakes.
    await Promise.all([
      o.effects.outbox.dispatch(after.deliveryIds),
      o.effects.sessionEvents.wake(after.wake),
      o.effects.ledger.afterCommit({ wake: [], stop: after.stopTasks, ended: after.endedTasks }),
    ]);
  };
}

async function commit(lane: LaneRunContext, run: Run, o: RunHandlerOptions): Promise<AfterCommit> {
  const env = { ...o.effects, runId: lane.runId, now: o.clock.now() };
  const parts = run.uow.parts(env);
  if (parts) {
    await lane.commitParts(parts.parts);
    return parts.after;
  }
  return lane.commit((tx) => run.uow.commit(tx, env));
}
