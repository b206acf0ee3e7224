import type { TaskRef, TerminalTaskStatus } from "@nahida/contracts";
import type { CronJobs } from "@nahida/cron";
import type { CompactionRepository, CronRepository, FencedPart, SessionEventRepository, SessionRepository, TurnRepository, Tx } from "@nahida/db";
import type { LaneStore } from "@nahida/lanes";
import type { Outbox, SessionEvents } from "@nahida/outbox";
import type { TaskLedger } from "@nahida/tasks";

/** What a commit leaves to do once it is in: deliveries to enqueue and lanes to wake (both swept up if lost). */
export interface AfterCommit {
  deliveryIds: string[];
  wake: string[];
  /** Sub-agent tasks the commit ended whose runs may still be going: aborted after it. */
  stopTasks: TaskRef[];
  /** How the tasks the commit ended ended, counted once it is in. */
  endedTasks: TerminalTaskStatus[];
}

/** The stores effects write through, shared by every run of a worker. */
export interface EffectStores {
  outbox: Outbox;
  sessions: SessionRepository;
  turns: TurnRepository;
  events: SessionEventRepository;
  sessionEvents: SessionEvents;
  cron: CronRepository;
  cronJobs: CronJobs;
  lanes: LaneStore;
  /** Sub-agent tasks: spawned at once, adopted, consumed and ended in commits. */
  ledger: TaskLedger;
  /** History compaction checkpoints. */
  compactions: CompactionRepository;
}

/** What an effect kind's write gets: the stores, the run, and the commit's instant. */
export interface EffectEnv extends EffectStores {
  runId: string;
  now: Date;
}

/**
 * The order kinds write in within one commit (lower first); kinds of one stage write in the
 * order the run first emitted them. Sessions exist before turns go into them, turns before
 * the deliveries that name them, deliveries before the outcomes that list them; events into
 * other lanes (which lock those lanes' rows) come late, so the locks are held briefly.
 */
export const EffectStage = {
  sessions: 10,
  history: 15,
  chat: 20,
  turns: 30,
  records: 40,
  deliveries: 50,
  jobs: 60,
  cronOutcomes: 70,
  tasks: 74,
  events: 75,
  eventOutcomes: 80,
} as const;

/**
 * One kind of effect a run has on the world, and how it commits. A run's effects of one
 * kind are written together, in the order they were emitted, inside the run's fenced
 * transaction (`write`), or as parts of the one-statement commit (`parts`) when the kind
 * has them and they fit. The one-statement commit is taken when every kind the run
 * emitted offers parts for its values; nothing is listed by hand.
 */
export interface EffectKind<V> {
  /** Unique within a worker (docs/run.md lists the built-in ones). */
  name: string;
  stage: number;
  write(values: readonly V[], tx: Tx, env: EffectEnv): Promise<Partial<AfterCommit> | void>;
  /** These values as parts of one statement (every part ANDs the fence); null when they need the transaction. */
  parts?(values: readonly V[], env: EffectEnv): { parts: FencedPart[]; after?: Partial<AfterCommit> } | null;
}

export const defineEffect = <V>(kind: EffectKind<V>): EffectKind<V> => kind;
