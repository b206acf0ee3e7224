import { randomUUID } from "node:crypto";
import { Prisma, laneAppendCtes, newRowId, type Database, type FencedPart, type Tx } from "@nahida/db";
import { LaneMode } from "@nahida/contracts";
import { currentTraceparent } from "@nahida/observability";

/** The run's lease was taken over (or released); its work must not be committed. */
export class LeaseLostError extends Error {
  override name = "LeaseLostError";
  constructor(readonly laneKey: string) {
    super(`lease on lane ${laneKey} was lost`);
  }
}

export interface LaneItemRow {
  id: string;
  seq: bigint;
  /** What the item is; the lanes themselves do not interpret it (contracts' LaneItem does). */
  kind: string;
  refId: string;
  status: "pending" | "running";
  runId: string | null;
  /** Runs that already took this item, including the current one once started. */
  attempts: number;
  /** The trace of whoever appended it (W3C traceparent); null when tracing was off. */
  traceparent: string | null;
}

export interface Lease {
  laneKey: string;
  token: string;
  mode: LaneMode;
}

/** A lane item as stored: its kind and the row it points at (`encodeLaneItem` makes one of a contract's item). */
export interface LaneItemRef {
  kind: string;
  refId: string;
}

export interface AppendResult {
  itemId: string;
  seq: bigint;
  /** False when the same (kind, refId) was already in a lane. */
  created: boolean;
}

/**
 * Takes lane $1's lease for owner $2 with token $3 for $4 ms, if it is free, expired, and not
 * in retry backoff (append a RETURNING clause).
 */
const CLAIM_LANE = `UPDATE lanes
    SET lease_owner = $2, lease_token = $3::uuid,
        lease_expires_at = now() + $4 * interval '1 millisecond', updated_at = now()
  WHERE key = $1
    AND (lease_token IS NULL OR lease_expires_at < now())
    AND (retry_at IS NULL OR retry_at <= now())`;

/**
 * A run's items: the lane's running items that the run took. Named by lane as well, so the
 * statement reads the lane's open items (`lane_items_lane_key_status_seq_idx`) and never
 * the index of every lane's unfinished items, which a planner that believes none are open
 * (its statistics from a ledger of millions of finished items) would otherwise scan whole.
 */
function runItems(laneKey: string, runId: string): Prisma.Sql {
  return Prisma.sql`lane_key = ${laneKey} AND status = 'running' AND run_id = ${runId}::uuid`;
}

/** The two handles the store needs: Prisma for transactions shared with handlers, pg for the rest. */
export type LaneDatabase = Pick<Database, "prisma" | "pool" | "statements">;

/**
 * Postgres side of session lanes: per-lane sequence numbers, a fenced lease, and run
 * bookkeeping. Every method is one statement or one short transaction.
 * See docs/lanes.md for why these statements give the lane guarantees.
 *
 * Statements that stand alone go straight to the pg pool: they run several times per run
 * and Prisma's query machinery costs more CPU than the statement. Transactions a handler
 * writes into (`fenced`) go through Prisma, so the handler gets a Prisma `tx`.
 */
export class LaneStore {
  private readonly prisma: LaneDatabase["prisma"];
  private readonly pool: LaneDatabase["pool"];
  private readonly statements: LaneDatabase["statements"];

  constructor(db: LaneDatabase) {
    this.prisma = db.prisma;
    this.pool = db.pool;
    this.statements = db.statements;
  }

  /**
   * Appends an item to a lane, creating the lane on first use. Idempotent per (kind, refId).
   * The upsert locks the lane row, so sequence order equals commit order within a lane.
   * The active span is stored with the item: the run that takes it continues that trace.
   * Producers encode the kinds of contracts with `encodeLaneItem`; the lanes store any kind.
   */
  async append(laneKey: string, item: LaneItemRef, tx?: Tx): Promise<AppendResult> {
    const insert = Prisma.sql`
      WITH ${laneAppendCtes({ laneKey, kind: item.kind, refId: Prisma.sql`${item.refId}::text`, traceparent: currentTraceparent() })}
      SELECT id, seq FROM item`;
    const select = Prisma.sql`SELECT id::text AS id, seq FROM lane_items WHERE kind = ${item.kind} AND ref_id = ${item.refId}`;
    const query = async (statement: Prisma.Sql) =>
      tx ? tx.$queryRaw<{ id: string; seq: bigint }[]>(statement) : (await this.statements.rows<{ id: string; seq: string }>(statement)).map((r) => ({ id: r.id, seq: BigInt(r.seq) }));
    const inserted = await query(insert);
    if (inserted[0]) return { itemId: inserted[0].id, seq: BigInt(inserted[0].seq), created: true };
    const existing = await query(select);
    const row = existing[0];
    if (!row) throw new Error(`lane item ${item.kind}/${item.refId} vanished during append`);
    return { itemId: row.id, seq: BigInt(row.seq), created: false };
  }

  /** Takes the lane's lease if it is free, expired, and not in retry backoff. */
  async tryClaim(laneKey: string, owner: string, leaseMs: number): Promise<Lease | null> {
    const token = randomUUID();
    const { rows } = await this.statements.query<{ mode: string }>(`${CLAIM_LANE} RETURNING mode`, [laneKey, owner, token, leaseMs]);
    const row = rows[0];
    if (!row) return null;
    const mode = LaneMode.safeParse(row.mode);
    return { laneKey, token, mode: mode.success ? mode.data : "collect" };
  }

  /**
   * Claim, read and start in one statement: takes the lease if the lane is free (as
   * `tryClaim`), reads its oldest open items (one in `followup` mode), gives up on those
   * already tried `maxAttempts` times (their runs all died), and starts a run over the rest
   * (as `startRun`). Null when another worker holds the lane or it is backing off.
   */
  async claimAndStart(
    laneKey: string,
    owner: string,
    leaseMs: number,
    o: { workerId: string; maxBatchSize: number; maxAttempts: number },
  ): Promise<{ lease: Lease; run: { runId: string; items: LaneItemRow[] } | null; abandoned: string[] } | null> {
    const token = randomUUID();
    const runId = newRowId();
    const { rows } = await this.statements.query<{
      mode: string | null;
      run_id: string | null;
      items: { id: string; seq: string; kind: string; refId: string; attempts: number; traceparent: string | null }[];
      abandoned: string[];
    }>(`WITH lane AS (${CLAIM_LANE} RETURNING key, mode
       ), open AS (
         SELECT i.id, i.seq, i.kind, i.ref_id, i.run_id, i.attempts, i.traceparent
           FROM lane_items i JOIN lane ON i.lane_key = lane.key
          WHERE i.status IN ('pending', 'running')
          ORDER BY i.seq
          LIMIT (SELECT CASE WHEN mode = 'followup' THEN 1 ELSE $5 END FROM lane)
       ), runnable AS (
         SELECT * FROM open WHERE attempts < $6
       ), abandoned AS (
         -- The status again in every UPDATE: a claim that waited behind a commit's lock
         -- (taking over an expired lease) read "open" before that commit; the recheck on
         -- the newest row version leaves out items it just finished.
         UPDATE lane_items SET status = 'failed', error = $7, done_at = now()
          WHERE id IN (SELECT id FROM open WHERE attempts >= $6) AND status IN ('pending', 'running')
         RETURNING id
       ), lost AS (
         UPDATE lane_runs SET status = 'lost', finished_at = now()
          WHERE id IN (SELECT run_id FROM runnable WHERE run_id IS NOT NULL) AND status = 'running'
       ), taken AS (
         UPDATE lane_items SET status = 'running', run_id = $8::uuid, attempts = attempts + 1
          WHERE id IN (SELECT id FROM runnable) AND status IN ('pending', 'running')
         RETURNING id, seq, kind, ref_id, attempts, traceparent
       ), run AS (
         -- Counted from what was taken, not from what was read: a claim that waited for the
         -- lane row behind another worker's whole claim, run and commit reads, in its older
         -- snapshot, items that commit finished; the recheck above leaves them out, and no
         -- run starts with nothing in it.
         INSERT INTO lane_runs (id, lane_key, worker_id, status, item_count)
         SELECT $8::uuid, key, $9, 'running', (SELECT count(*)::int FROM taken) FROM lane
          WHERE EXISTS (SELECT 1 FROM taken)
         RETURNING id
       )
       SELECT (SELECT mode FROM lane) AS mode, (SELECT id::text FROM run) AS run_id,
              coalesce((SELECT json_agg(json_build_object('id', id::text, 'seq', seq::text, 'kind', kind, 'refId', ref_id, 'attempts', attempts, 'traceparent', traceparent) ORDER BY seq) FROM taken), '[]'::json) AS items,
              coalesce((SELECT json_agg(id::text) FROM abandoned), '[]'::json) AS abandoned`,
        [laneKey, owner, token, leaseMs, o.maxBatchSize, o.maxAttempts, `gave up after ${o.maxAttempts} attempts`, runId, o.workerId],
    );
    const row = rows[0];
    if (!row || row.mode === null) return null;
    const mode = LaneMode.safeParse(row.mode);
    const lease: Lease = { laneKey, token, mode: mode.success ? mode.data : "collect" };
    const items: LaneItemRow[] = row.items.map((i) => ({
      id: i.id,
      seq: BigInt(i.seq),
      kind: i.kind,
      refId: i.refId,
      status: "running",
      runId,
      attempts: i.attempts,
      traceparent: i.traceparent,
    }));
    return { lease, run: row.run_id ? { runId: row.run_id, items } : null, abandoned: row.abandoned };
  }

  /** Extends the lease; false once it has been taken over. */
  async renew(lease: Lease, leaseMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      "UPDATE lanes SET lease_expires_at = now() + $3 * interval '1 millisecond' WHERE key = $1 AND lease_token = $2::uuid",
      [lease.laneKey, lease.token, leaseMs],
    );
    return rowCount === 1;
  }

  async release(lease: Lease): Promise<void> {
    await this.pool.query(
      "UPDATE lanes SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now() WHERE key = $1 AND lease_token = $2::uuid",
      [lease.laneKey, lease.token],
    );
  }

  /**
   * Releases the lease only if the lane's newest item is `lastSeq` (the newest item of the
   * run just committed; older open items would have been in that run, which takes the
   * oldest first): the one statement that both gives the lane back and looks again. An
   * append increments `last_seq` under the lane row's lock, and an UPDATE that waited for
   * that lock checks its condition against the row as the append left it, so an item
   * committed at any moment is either seen here (false: run again) or finds the lease free
   * for its wake.
   */
  async releaseIfCaughtUp(lease: Lease, lastSeq: bigint): Promise<boolean> {
    const { rowCount } = await this.statements.query(`UPDATE lanes SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
      WHERE key = $1 AND lease_token = $2::uuid AND last_seq = $3`,
      [lease.laneKey, lease.token, lastSeq.toString()],
    );
    return rowCount === 1;
  }

  /** Open items in arrival order. `running` ones belong to a run whose worker died. */
  async openItems(laneKey: string, limit: number): Promise<LaneItemRow[]> {
    const { rows } = await this.statements.query<Omit<LaneItemRow, "seq"> & { seq: string }>(`SELECT id::text AS id, seq, kind, ref_id AS "refId", status, run_id::text AS "runId", attempts, traceparent
       FROM lane_items
      WHERE lane_key = $1 AND status IN ('pending', 'running')
      ORDER BY seq
      LIMIT $2`,
      [laneKey, limit],
    );
    return rows.map((r) => ({ ...r, seq: BigInt(r.seq) }));
  }

  /**
   * Open items of every lane and the oldest one's creation, for the scrape-time gauges:
   * both read the partial index of unfinished items (`done_at IS NULL`); the count stops at `cap`.
   */
  async openItemStats(cap = 100_000): Promise<{ count: number; oldestCreatedAt: Date | null }> {
    const { rows } = await this.statements.query<{ count: number; oldest: Date | null }>(`SELECT (SELECT count(*)::int FROM (SELECT 1 FROM lane_items WHERE done_at IS NULL LIMIT $1) AS open) AS count,
            (SELECT min(created_at) FROM lane_items WHERE done_at IS NULL) AS oldest`,
      [cap],
    );
    return { count: rows[0]?.count ?? 0, oldestCreatedAt: rows[0]?.oldest ?? null };
  }

  async hasOpenItems(laneKey: string): Promise<boolean> {
    const { rows } = await this.pool.query<{ open: boolean }>(
      "SELECT EXISTS (SELECT 1 FROM lane_items WHERE lane_key = $1 AND status IN ('pending', 'running')) AS open",
      [laneKey],
    );
    return rows[0]?.open ?? false;
  }

  /**
   * Runs `fn` in a transaction that holds the lane row locked and proves the lease is still
   * ours. A takeover must update that row, so it waits for this commit or finds the token
   * changed: work committed here can never race a second run of the same lane.
   */
  async fenced<T>(lease: Lease, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.prisma.$transaction(async (tx) => {
      const held = await tx.$queryRaw<{ key: string }[]>`
        SELECT key FROM lanes WHERE key = ${lease.laneKey} AND lease_token = ${lease.token}::uuid FOR UPDATE`;
      if (held.length === 0) throw new LeaseLostError(lease.laneKey);
      return fn(tx);
    });
  }

  /**
   * `fenced` plus `completeRun` as one statement, for a run whose writes are all
   * {@link FencedPart}s: the lane row is locked and the lease checked in the CTE `held`,
   * every part and the run's bookkeeping write only while `held` has the row, and nothing
   * is written when the lease was lost (LeaseLostError). A takeover must update the lane
   * row, so it waits for this statement or this statement finds the token changed, as with
   * `fenced`. Every part takes the lock through its fence before it writes (the fence is a
   * one-time condition evaluated first), so the lane row is still locked first. With
   * `releaseAtSeq` (the run's newest item) the lease is given back in the same statement
   * when nothing was appended since (as `releaseIfCaughtUp`).
   */
  async commitStatement(
    lease: Lease,
    runId: string,
    rejected: ReadonlyMap<string, string>,
    parts: readonly FencedPart[],
    releaseAtSeq?: bigint,
  ): Promise<{ released: boolean }> {
    const fence = Prisma.raw("EXISTS (SELECT 1 FROM held)");
    const items =
      rejected.size === 0
        ? Prisma.sql`UPDATE lane_items SET status = 'done', done_at = now() WHERE ${runItems(lease.laneKey, runId)} AND ${fence}`
        : Prisma.sql`
            UPDATE lane_items
               SET status = CASE WHEN id = ANY(${[...rejected.keys()]}::uuid[]) THEN 'failed' ELSE 'done' END,
                   error = coalesce((${[...rejected.values()]}::text[])[array_position(${[...rejected.keys()]}::uuid[], id)], error),
                   done_at = now()
             WHERE ${runItems(lease.laneKey, runId)} AND ${fence}`;
    const ctes = [
      Prisma.sql`held AS (SELECT key FROM lanes WHERE key = ${lease.laneKey} AND lease_token = ${lease.token}::uuid FOR UPDATE)`,
      Prisma.sql`items AS (${items})`,
      Prisma.sql`run AS (UPDATE lane_runs SET status = 'succeeded', finished_at = now() WHERE id = ${runId}::uuid AND ${fence})`,
      ...parts.map((part, index) => Prisma.sql`${Prisma.raw(`part_${index}`)} AS (${part(fence)})`),
      // `releaseIfCaughtUp` in the same statement. The row is ours (locked in `held`), and
      // an append that committed while this statement waited for the lock is seen: the
      // UPDATE checks its condition against the newest row version.
      Prisma.sql`released AS (
        UPDATE lanes SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
         WHERE key = ${lease.laneKey} AND lease_token = ${lease.token}::uuid AND last_seq = ${releaseAtSeq?.toString() ?? null}::bigint AND ${fence}
        RETURNING 1)`,
    ];
    const statement = Prisma.sql`
      WITH ${Prisma.join(ctes, ",\n")}
      SELECT ${fence} AS held, EXISTS (SELECT 1 FROM released) AS released`;
    const { rows } = await this.statements.query<{ held: boolean; released: boolean }>(statement.text, statement.values);
    if (!rows[0]?.held) throw new LeaseLostError(lease.laneKey);
    return { released: rows[0].released };
  }

  /**
   * Records a run over `items` in one statement, fenced like `fenced`: the lane row is
   * locked and must still carry our token. A dead run that held some items is marked `lost`.
   */
  async startRun(lease: Lease, workerId: string, items: LaneItemRow[]): Promise<string> {
    const runId = newRowId();
    const ids = items.map((i) => i.id);
    const staleRuns = [...new Set(items.map((i) => i.runId).filter((r): r is string => r !== null))];
    const { rows } = await this.statements.query<{ started: number }>(`WITH held AS (SELECT key FROM lanes WHERE key = $1 AND lease_token = $2::uuid FOR UPDATE),
          lost AS (UPDATE lane_runs SET status = 'lost', finished_at = now()
                    WHERE id = ANY($3::uuid[]) AND status = 'running' AND EXISTS (SELECT 1 FROM held)),
          run AS (INSERT INTO lane_runs (id, lane_key, worker_id, status, item_count)
                  SELECT $4::uuid, key, $5, 'running', $6 FROM held RETURNING id),
          taken AS (UPDATE lane_items SET status = 'running', run_id = (SELECT id FROM run), attempts = attempts + 1
                     WHERE id = ANY($7::uuid[]) AND status IN ('pending', 'running') AND EXISTS (SELECT 1 FROM run) RETURNING id)
       SELECT count(*)::int AS started FROM run`,
      [lease.laneKey, lease.token, staleRuns, runId, workerId, items.length, ids],
    );
    if (rows[0]?.started !== 1) throw new LeaseLostError(lease.laneKey);
    return runId;
  }

  /**
   * Marks the run and its items done (the `rejected` ones failed, with their reason); call
   * inside `fenced` together with the run's results.
   */
  async completeRun(tx: Tx, lease: Lease, runId: string, rejected: ReadonlyMap<string, string> = new Map()): Promise<void> {
    for (const [itemId, reason] of rejected) {
      await tx.$executeRaw`
        UPDATE lane_items SET status = 'failed', error = ${reason}, done_at = now()
         WHERE id = ${itemId}::uuid AND run_id = ${runId}::uuid AND status = 'running'`;
    }
    // Items and run in one statement: this runs for every run.
    await tx.$executeRaw`
      WITH items AS (
        UPDATE lane_items SET status = 'done', done_at = now() WHERE ${runItems(lease.laneKey, runId)}
      )
      UPDATE lane_runs SET status = 'succeeded', finished_at = now() WHERE id = ${runId}::uuid`;
  }

  /**
   * Ends a failed run: items under `maxAttempts` go back to pending and the lane backs off
   * until `retryAt`; items at the limit fail for good so one poison message cannot block
   * the lane forever.
   */
  async failRun(lease: Lease, runId: string, error: string, maxAttempts: number, backoffMs: number): Promise<void> {
    await this.fenced(lease, async (tx) => {
      await tx.$executeRaw`
        UPDATE lane_runs SET status = 'failed', finished_at = now(), error = ${error} WHERE id = ${runId}::uuid`;
      await tx.$executeRaw`
        UPDATE lane_items
           SET status = CASE WHEN attempts >= ${maxAttempts} THEN 'failed' ELSE 'pending' END,
               error = ${error},
               done_at = CASE WHEN attempts >= ${maxAttempts} THEN now() ELSE NULL END
         WHERE ${runItems(lease.laneKey, runId)}`;
      await tx.$executeRaw`
        UPDATE lanes SET retry_at = now() + ${backoffMs} * interval '1 millisecond'
         WHERE key = ${lease.laneKey}
           AND EXISTS (SELECT 1 FROM lane_items WHERE lane_key = ${lease.laneKey} AND status = 'pending' AND run_id = ${runId}::uuid)`;
    });
  }

  /** Returns an interrupted run's items to pending without counting the attempt (shutdown, a newer message). */
  async handBack(lease: Lease, runId: string, why = "handed back at shutdown"): Promise<void> {
    await this.fenced(lease, async (tx) => {
      await tx.$executeRaw`
        UPDATE lane_runs SET status = 'lost', finished_at = now(), error = ${why} WHERE id = ${runId}::uuid`;
      await tx.$executeRaw`
        UPDATE lane_items SET status = 'pending', run_id = NULL, attempts = greatest(attempts - 1, 0)
         WHERE ${runItems(lease.laneKey, runId)}`;
    });
  }

  /** Gives up on items whose earlier runs all died with their workers. */
  async abandon(lease: Lease, itemIds: string[], reason: string): Promise<void> {
    await this.fenced(lease, async (tx) => {
      await tx.$executeRaw`
        UPDATE lane_items SET status = 'failed', error = ${reason}, done_at = now()
         WHERE id = ANY(${itemIds}::uuid[])`;
    });
  }

  /**
   * Lanes with open items older than `graceMs` and nobody holding a live lease: their wake
   * was lost or their worker died. The partial index of unfinished items keeps this cheap:
   * it asks for `done_at IS NULL` (every status that ends an item sets `done_at`), which no
   * statement of one lane implies, so those never take the index for theirs.
   */
  async strandedLanes(graceMs: number, limit: number): Promise<string[]> {
    const { rows } = await this.statements.query<{ key: string }>(`SELECT l.key FROM lanes l
      WHERE l.key IN (
              SELECT DISTINCT lane_key FROM lane_items
               WHERE done_at IS NULL
                 AND created_at < now() - $1 * interval '1 millisecond')
        AND (l.lease_token IS NULL OR l.lease_expires_at < now())
        AND (l.retry_at IS NULL OR l.retry_at <= now())
      LIMIT $2`,
      [graceMs, limit],
    );
    return rows.map((r) => r.key);
  }

  /** Sets a lane's mode (`/queue`), creating the lane on first use; in the caller's transaction with `tx`. */
  async setMode(laneKey: string, mode: LaneMode, tx?: Tx): Promise<void> {
    const statement = Prisma.sql`
      INSERT INTO lanes (key, mode, updated_at) VALUES (${laneKey}, ${mode}, now())
      ON CONFLICT (key) DO UPDATE SET mode = EXCLUDED.mode, updated_at = now()`;
    if (tx) await tx.$executeRaw(statement);
    else await this.statements.rows(statement);
  }
}
