import type { DeliveryPolicy, OutboundMessage } from "@nahida/contracts";
import type { Database, PrismaClient, Tx } from "../database";
import { jsonbParam, pgJson, type FencedPart, type HotStatements } from "../statements";
import { Prisma, type Delivery } from "../generated/prisma/client";
import { newRowId } from "../ids";

export interface NewDelivery {
  /** The row's id; given by callers that name the delivery before their transaction commits. */
  id?: string;
  target: string;
  message: OutboundMessage;
  /** `agent`, `command`, `api`, `cron:<id>`, `agent:<run_id>`. */
  source: string;
  sessionId?: string;
  inboundMessageId?: string;
  runId?: string;
  /** A delivery still queued after this instant expires instead of being sent late. */
  expiresAt?: Date;
  idempotencyKey?: string;
  requestHash?: string;
  /** Default `at_least_once`. */
  policy?: DeliveryPolicy;
}

/** Every column of `deliveries` under its model field name, for statements that return rows. */
const DELIVERY_COLUMNS = Prisma.raw(
  `id::text AS id, seq, target, message, status, attempts, platform_message_ids AS "platformMessageIds", sent_parts AS "sentParts",
   policy, uncertain_parts AS "uncertainParts", error, source, session_id::text AS "sessionId", inbound_message_id::text AS "inboundMessageId",
   run_id::text AS "runId", idempotency_key AS "idempotencyKey", request_hash AS "requestHash", created_at AS "createdAt",
   updated_at AS "updatedAt", expires_at AS "expiresAt", sent_at AS "sentAt", not_before AS "notBefore"`,
);

/**
 * Outbound sends. Rows are written in the same transaction as whatever caused them (the
 * outbox pattern); the `delivery.send` job only names the row.
 */
export class DeliveryRepository {
  private readonly prisma: PrismaClient;
  private readonly statements: HotStatements;

  constructor(db: Pick<Database, "prisma" | "statements">) {
    this.prisma = db.prisma;
    this.statements = db.statements;
  }

  async create(input: NewDelivery, tx?: Tx): Promise<Delivery> {
    if (tx) return tx.delivery.create({ data: this.row(input) });
    // On its own (`POST /api/send`): one INSERT through pg, without Prisma's machinery. Only
    // what Postgres assigns comes back: every other column is the input or its default, and
    // reading all 22 back (the message's JSON again, four dates, two arrays) was a tenth of
    // the route's CPU (issue 26). The repository's test holds this row to a fresh read.
    // Made storable here, as the INSERT's parameter would be, so the row returned is the row stored.
    const row = pgJson({ ...input, id: input.id ?? newRowId(), expiresAt: undefined });
    const expiresAt = input.expiresAt;
    const [assigned] = await this.statements.rows<{ seq: string; createdAt: Date }>(
      Prisma.sql`${insertDeliveries([{ ...row, ...(expiresAt ? { expiresAt } : {}) }], Prisma.sql`true`)} RETURNING seq, created_at AS "createdAt"`,
    );
    return {
      id: row.id,
      seq: BigInt(assigned!.seq),
      target: row.target,
      message: row.message as unknown as Prisma.JsonValue,
      status: "queued",
      attempts: 0,
      platformMessageIds: [],
      sentParts: 0,
      policy: row.policy ?? "at_least_once",
      uncertainParts: [],
      error: null,
      source: row.source,
      sessionId: row.sessionId ?? null,
      inboundMessageId: row.inboundMessageId ?? null,
      runId: row.runId ?? null,
      idempotencyKey: row.idempotencyKey ?? null,
      requestHash: row.requestHash ?? null,
      createdAt: assigned!.createdAt,
      updatedAt: assigned!.createdAt,
      expiresAt: expiresAt ?? null,
      sentAt: null,
      notBefore: null,
    };
  }

  /**
   * `create` for several rows as a part of a run's one-statement commit, in the order given
   * (a chat's deliveries go out in `seq` order). Rows with an idempotency key are not taken
   * here: they need `createOnce`.
   */
  createPart(inputs: readonly (NewDelivery & { id: string; expiresAt: Date })[]): FencedPart {
    if (inputs.some((i) => i.idempotencyKey !== undefined)) throw new Error("a delivery with an idempotency key needs createOnce");
    return (fence) => insertDeliveries(inputs, fence);
  }

  /**
   * Creates the row unless one with the same idempotency key exists, and returns whichever
   * row holds the key. `ON CONFLICT (idempotency_key) DO NOTHING` (not a failed insert) keeps
   * the caller's transaction usable, and a concurrent insert of the same key waits for the
   * other to commit; any other conflict (a reused id) is an error, not a silent skip.
   */
  async createOnce(input: NewDelivery & { id: string; idempotencyKey: string }, tx?: Tx): Promise<{ delivery: Delivery; created: boolean }> {
    const db = tx ?? this.prisma;
    // The new row comes back from the insert (aliased to the model's fields); only a repeat
    // of the key reads the row that holds it.
    const [inserted] = await db.$queryRaw<Delivery[]>`
      INSERT INTO deliveries (id, target, message, source, session_id, inbound_message_id, run_id, expires_at, idempotency_key, request_hash, policy)
      VALUES (${input.id}::uuid, ${input.target}, ${jsonbParam(input.message)}::jsonb, ${input.source},
              ${input.sessionId ?? null}::uuid, ${input.inboundMessageId ?? null}::uuid, ${input.runId ?? null}::uuid,
              ${input.expiresAt ?? null}, ${input.idempotencyKey}, ${input.requestHash ?? null}, ${input.policy ?? "at_least_once"})
      ON CONFLICT (idempotency_key) DO NOTHING
      RETURNING ${DELIVERY_COLUMNS}`;
    if (inserted) return { delivery: inserted, created: true };
    const delivery = await db.delivery.findUnique({ where: { idempotencyKey: input.idempotencyKey } });
    if (!delivery) throw new Error(`delivery with idempotency key ${input.idempotencyKey} vanished`);
    return { delivery, created: false };
  }

  private row(input: NewDelivery) {
    return {
      ...(input.id ? { id: input.id } : {}),
      target: input.target,
      message: pgJson(input.message) as unknown as Prisma.InputJsonValue,
      source: input.source,
      sessionId: input.sessionId ?? null,
      inboundMessageId: input.inboundMessageId ?? null,
      runId: input.runId ?? null,
      expiresAt: input.expiresAt ?? null,
      idempotencyKey: input.idempotencyKey ?? null,
      requestHash: input.requestHash ?? null,
      policy: input.policy ?? "at_least_once",
    };
  }

  async findByIdempotencyKey(idempotencyKey: string): Promise<Delivery | null> {
    return this.prisma.delivery.findUnique({ where: { idempotencyKey } });
  }

  async get(id: string): Promise<Delivery | null> {
    return this.prisma.delivery.findUnique({ where: { id } });
  }

  /**
   * Everything a send decides before the platform call, in one statement: the row's state,
   * its TTL, its chat's order (an earlier live delivery to the same target, or a rate limit
   * on it, makes it wait), and then the claim, which counts the attempt and is the record
   * that an attempt on part `sent_parts` is about to begin.
   *
   * A row already `sending` is only taken over once its sender has been silent for
   * `staleAfterMs` (it touches the row with every accepted part and while a slow platform
   * call runs), so two workers never send the same delivery at once. The returned
   * `attempt` fences the claim: the writes that follow only land while the row is still
   * this attempt's. A taken-over row's part `sent_parts` has an unknown outcome (the silent
   * worker may have died after the platform accepted it and before recording it): it is
   * added to `uncertain_parts` and, under `at_most_once`, skipped instead of sent again.
   */
  async claim(id: string, staleAfterMs: number): Promise<DeliveryClaim> {
    // Through pg directly: two statements per send, the delivery worker's hot path.
    const rows = await this.statements.rows<ClaimRow>(Prisma.sql`
      WITH cur AS (
        SELECT id, status, target, seq, sent_parts, expires_at, updated_at, not_before FROM deliveries WHERE id = ${id}::uuid FOR UPDATE
      ), earlier AS (
        -- Looked up from the row (LATERAL): by its chat and sequence number in the index of
        -- unsent deliveries, not by a scan of every chat's unsent ones joined to it, which a
        -- planner whose statistics say none are unsent would take.
        SELECT x.waiting, x.not_before FROM cur, LATERAL (
          SELECT count(*) > 0 AS waiting, max(e.not_before) AS not_before
            FROM deliveries e
           WHERE e.target = cur.target AND e.seq < cur.seq AND e.status IN ('queued', 'sending')
             AND (e.expires_at IS NULL OR e.expires_at > now())
        ) x
      ), verdict AS (
        SELECT cur.id, cur.target,
               CASE WHEN cur.status = 'sending' THEN cur.updated_at + ${staleAfterMs}::int * interval '1 millisecond'
                    ELSE greatest(cur.not_before, earlier.not_before) END AS wait_until,
               CASE
                 WHEN cur.status IN ('sent', 'failed', 'expired') THEN 'done'
                 -- Only a queued row expires: a sending one may be out already (its takeover lists it).
                 WHEN cur.status = 'queued' AND cur.expires_at < now() AND cur.sent_parts = 0 THEN 'expired'
                 WHEN cur.not_before > now() OR earlier.waiting THEN 'wait'
                 WHEN cur.status = 'queued' THEN 'claimed'
                 WHEN cur.updated_at < now() - ${staleAfterMs}::int * interval '1 millisecond' THEN 'taken_over'
                 ELSE 'busy'
               END AS verdict
          FROM cur, earlier
      ), claimed AS (
        UPDATE deliveries d
           SET status = 'sending', attempts = d.attempts + 1, updated_at = now(), not_before = NULL,
               uncertain_parts = CASE WHEN v.verdict = 'taken_over' THEN array_append(d.uncertain_parts, d.sent_parts) ELSE d.uncertain_parts END,
               sent_parts = CASE WHEN v.verdict = 'taken_over' AND d.policy = 'at_most_once' THEN d.sent_parts + 1 ELSE d.sent_parts END
          FROM verdict v
         WHERE d.id = v.id AND v.verdict IN ('claimed', 'taken_over')
        RETURNING d.attempts, d.sent_parts, d.target, d.message, d.policy,
                  CASE WHEN v.verdict = 'taken_over' THEN d.uncertain_parts[cardinality(d.uncertain_parts)] END AS uncertain_part
      ), expire AS (
        UPDATE deliveries d SET status = 'expired', error = 'expired before it could be sent', updated_at = now()
          FROM verdict v WHERE d.id = v.id AND v.verdict = 'expired'
        RETURNING d.id
      )
      SELECT v.verdict, GREATEST(0, CEIL(EXTRACT(EPOCH FROM (v.wait_until - now())) * 1000))::int AS wait_ms,
             c.attempts, c.sent_parts, v.target, c.message, c.policy, c.uncertain_part
        FROM verdict v LEFT JOIN claimed c ON true`,
    );
    const row = rows[0];
    if (!row) return { kind: "missing" };
    switch (row.verdict) {
      case "claimed":
      case "taken_over":
        return {
          kind: "claimed",
          attempt: row.attempts!,
          sentParts: row.sent_parts!,
          uncertainPart: row.uncertain_part,
          target: row.target!,
          message: row.message,
          policy: row.policy as DeliveryPolicy,
        };
      case "wait":
      case "busy":
        return { kind: row.verdict, waitMs: row.wait_ms ?? 0 };
      case "expired":
        return { kind: "expired", target: row.target! };
      default:
        return { kind: row.verdict };
    }
  }

  /**
   * Records that part `index` was accepted by the platform; the `last` part also marks the
   * delivery sent, in the same statement, so no accepted-but-unfinished state remains for a
   * takeover to mistake for an attempt of unknown outcome. Guarded on `sent_parts` so a
   * retried job resumes after the last accepted part and never records one twice, and on
   * the claim's `attempt`: false means another worker took the row over, and this one must
   * stop sending.
   */
  async recordPart(id: string, attempt: number, index: number, platformMessageId: string, last: boolean): Promise<boolean> {
    const statement = Prisma.sql`
      UPDATE deliveries
         SET sent_parts = ${index + 1}::int, platform_message_ids = array_append(platform_message_ids, ${platformMessageId}::text),
             updated_at = now(),
             status = CASE WHEN ${last}::boolean THEN 'sent' ELSE status END,
             sent_at = CASE WHEN ${last}::boolean THEN now() ELSE sent_at END,
             error = CASE WHEN ${last}::boolean THEN NULL ELSE error END
       WHERE id = ${id}::uuid AND attempts = ${attempt}::int AND status = 'sending' AND sent_parts = ${index}::int`;
    const { rowCount } = await this.statements.query(statement.text, statement.values);
    return rowCount === 1;
  }

  /**
   * The platform call for part `sent_parts` ended without an answer (a dropped connection, a
   * timeout): it may have been accepted. Lists the part as uncertain and, under
   * `at_most_once`, counts it as sent so no retry sends it again; the row moves on to
   * `then` (waiting for its retry, or failed) in the same statement.
   */
  async markOutcomeUnknown(id: string, attempt: number, then: { status: "queued" | "failed"; error: string }): Promise<void> {
    // One statement with the status change: a crash in between would leave the part
    // counted but the row `sending`, and its takeover would list the next part too.
    await this.prisma.$executeRaw`
      UPDATE deliveries
         SET uncertain_parts = array_append(uncertain_parts, sent_parts),
             sent_parts = CASE WHEN policy = 'at_most_once' THEN sent_parts + 1 ELSE sent_parts END,
             status = ${then.status}, error = ${then.error}, updated_at = now()
       WHERE id = ${id}::uuid AND attempts = ${attempt} AND status = 'sending'`;
  }

  /** Keeps a claim alive while a slow platform call runs; false once the row was taken over. */
  async touch(id: string, attempt: number): Promise<boolean> {
    const updated = await this.prisma.$executeRaw`
      UPDATE deliveries SET updated_at = now() WHERE id = ${id}::uuid AND attempts = ${attempt} AND status = 'sending'`;
    return updated === 1;
  }

  /** Marks a send with nothing left to send (every part recorded or skipped) as sent. */
  async markSent(id: string, attempt: number): Promise<void> {
    await this.prisma.$executeRaw`
      UPDATE deliveries SET status = 'sent', sent_at = now(), error = NULL, updated_at = now()
       WHERE id = ${id}::uuid AND attempts = ${attempt} AND status = 'sending'`;
  }

  /** Fails a delivery for good; with `attempt`, only while the row is still that claim's. */
  async markFailed(id: string, error: string, attempt?: number): Promise<void> {
    await this.prisma.delivery.updateMany({
      where: { id, status: { in: ["queued", "sending"] }, ...(attempt !== undefined ? { attempts: attempt } : {}) },
      data: { status: "failed", error },
    });
  }

  /**
   * Back to `queued` while a retry waits (429, 5xx), keeping the reason visible. With
   * `holdMs` (a rate limit) the row, and every later one to its chat, waits that long (by
   * the database's clock, which every replica's claim compares with).
   */
  async markWaiting(id: string, attempt: number, error: string, holdMs?: number): Promise<void> {
    await this.prisma.$executeRaw`
      UPDATE deliveries
         SET status = 'queued', error = ${error}, updated_at = now(),
             not_before = CASE WHEN ${holdMs ?? null}::int IS NULL THEN not_before ELSE now() + ${holdMs ?? 0} * interval '1 millisecond' END
       WHERE id = ${id}::uuid AND attempts = ${attempt} AND status = 'sending'`;
  }

  /**
   * The platform refuses sends until an operator acts (a logged-out account): back to
   * `queued` with the chat held for `holdMs`, like a rate limit, but only while the row is
   * younger than `maxWaitMs` (from its creation, by the database's clock); the hold is cut
   * to what is left of that, and a row past it is failed with `failedError` instead. This
   * bounds rows a TTL does not: those with parts out already, and those without a TTL.
   * Null when the claim is no longer this attempt's.
   */
  async markUnavailable(
    id: string,
    attempt: number,
    o: { waitingError: string; failedError: string; holdMs: number; maxWaitMs: number },
  ): Promise<{ kind: "waiting"; waitMs: number } | { kind: "failed" } | null> {
    const rows = await this.prisma.$queryRaw<{ status: string; wait_ms: number | null }[]>`
      WITH cur AS (
        SELECT id, created_at + ${o.maxWaitMs} * interval '1 millisecond' - now() AS left_over FROM deliveries
         WHERE id = ${id}::uuid AND attempts = ${attempt} AND status = 'sending'
      )
      UPDATE deliveries d
         SET status = CASE WHEN cur.left_over > interval '0' THEN 'queued' ELSE 'failed' END,
             error = CASE WHEN cur.left_over > interval '0' THEN ${o.waitingError} ELSE ${o.failedError} END,
             updated_at = now(),
             not_before = CASE WHEN cur.left_over > interval '0' THEN now() + LEAST(${o.holdMs} * interval '1 millisecond', cur.left_over) ELSE d.not_before END
        FROM cur
       WHERE d.id = cur.id
      RETURNING d.status, GREATEST(0, CEIL(EXTRACT(EPOCH FROM (d.not_before - now())) * 1000))::int AS wait_ms`;
    const row = rows[0];
    if (!row) return null;
    return row.status === "failed" ? { kind: "failed" } : { kind: "waiting", waitMs: row.wait_ms ?? o.holdMs };
  }

  /**
   * Expires a delivery that is still queued after its TTL. Never a `sending` one: its part 0
   * may be out already (the claim follows the same rule), and a retry of it would repeat it.
   */
  async expireIfDue(id: string): Promise<boolean> {
    const n = await this.prisma.$executeRaw`
      UPDATE deliveries SET status = 'expired', error = 'expired before it could be sent', updated_at = now()
       WHERE id = ${id}::uuid AND status = 'queued' AND sent_parts = 0
         AND expires_at IS NOT NULL AND expires_at < now()`;
    return n === 1;
  }

  /**
   * A page of deliveries, newest first, with the total that matches. Queued rows past their
   * TTL are expired first, so a list reads them as the single-row read does.
   */
  async list(filter: DeliveryListFilter): Promise<{ deliveries: Delivery[]; total: number }> {
    await this.prisma.$executeRaw`
      UPDATE deliveries SET status = 'expired', error = 'expired before it could be sent', updated_at = now()
       WHERE status = 'queued' AND sent_parts = 0 AND expires_at < now()`;
    const where: Prisma.DeliveryWhereInput = {
      ...(filter.status ? { status: filter.status } : {}),
      ...(filter.target ? { target: filter.target } : {}),
      ...(filter.source ? { source: filter.source } : {}),
      ...(filter.uncertain !== undefined ? { uncertainParts: { isEmpty: !filter.uncertain } } : {}),
      ...(filter.createdSince || filter.createdBefore
        ? { createdAt: { ...(filter.createdSince ? { gte: filter.createdSince } : {}), ...(filter.createdBefore ? { lt: filter.createdBefore } : {}) } }
        : {}),
    };
    const [deliveries, total] = await Promise.all([
      this.prisma.delivery.findMany({ where, orderBy: [{ createdAt: "desc" }, { seq: "desc" }], take: filter.limit, skip: filter.offset }),
      this.prisma.delivery.count({ where }),
    ]);
    return { deliveries, total };
  }

  /**
   * Moves a failed or expired delivery back to `queued` for one more attempt, on the same
   * row. The status condition makes it happen once however many callers race (two gateway
   * replicas, a double click): every other caller gets `not_retryable`. `sent_parts`,
   * `platform_message_ids` and `uncertain_parts` stay, so parts the platform accepted are
   * never sent again; `attempts` stays too, because it fences every claim's writes.
   */
  async requeue(id: string, expiresAt: Date): Promise<DeliveryRequeue> {
    const [row] = await this.prisma.$queryRaw<Delivery[]>`
      UPDATE deliveries
         SET status = 'queued', error = NULL, not_before = NULL, expires_at = ${expiresAt}, updated_at = now()
       WHERE id = ${id}::uuid AND status IN ('failed', 'expired')
      RETURNING ${DELIVERY_COLUMNS}`;
    if (row) return { kind: "requeued", delivery: row };
    const current = await this.get(id);
    return current ? { kind: "not_retryable", delivery: current } : { kind: "missing" };
  }

  /** Deliveries waiting longer than `olderThanMs`: their job may have been lost. */
  async stale(olderThanMs: number, limit: number): Promise<string[]> {
    const rows = await this.prisma.$queryRaw<{ id: string }[]>`
      SELECT id::text AS id FROM deliveries
       WHERE status IN ('queued', 'sending') AND updated_at < now() - ${olderThanMs} * interval '1 millisecond'
       ORDER BY created_at LIMIT ${limit}`;
    return rows.map((r) => r.id);
  }
}

export interface DeliveryListFilter {
  status?: string;
  target?: string;
  source?: string;
  /** Only those with (true) or without (false) a part of unknown outcome. */
  uncertain?: boolean;
  /** Created at or after this instant. */
  createdSince?: Date;
  /** Created before this instant. */
  createdBefore?: Date;
  limit: number;
  offset: number;
}

/** What {@link DeliveryRepository.requeue} did. */
export type DeliveryRequeue =
  | { kind: "requeued"; delivery: Delivery }
  /** Not failed or expired (already retried, or still live, or sent): unchanged. */
  | { kind: "not_retryable"; delivery: Delivery }
  | { kind: "missing" };

/** What {@link DeliveryRepository.claim} decided. */
export type DeliveryClaim =
  | {
      kind: "claimed";
      attempt: number;
      sentParts: number;
      /** The part a taken-over row had in flight, now listed as uncertain; null for a fresh claim. */
      uncertainPart: number | null;
      target: string;
      /** The stored OutboundMessage, to be parsed by the caller. */
      message: unknown;
      policy: DeliveryPolicy;
    }
  /** The row does not exist. */
  | { kind: "missing" }
  /** Already sent, failed or expired: nothing to do (a duplicate job). */
  | { kind: "done" }
  /** Past its TTL with nothing sent: it is now expired. */
  | { kind: "expired"; target: string }
  /** An earlier delivery to the chat is still live, or a rate limit holds it: look again after `waitMs`. */
  | { kind: "wait"; waitMs: number }
  /** Another worker is sending it and has not been silent long enough to take it over: look again after `waitMs`. */
  | { kind: "busy"; waitMs: number };

/**
 * The INSERT of deliveries, rows only where `condition` holds, fed in the order given so
 * that `seq` keeps it (the rows travel as one jsonb parameter: one statement text for any
 * number of rows).
 */
function insertDeliveries(inputs: readonly (NewDelivery & { id: string })[], condition: Prisma.Sql): Prisma.Sql {
  const rows = inputs.map((i) => ({
    id: i.id,
    target: i.target,
    message: i.message,
    source: i.source,
    session_id: i.sessionId ?? null,
    inbound_message_id: i.inboundMessageId ?? null,
    run_id: i.runId ?? null,
    expires_at: i.expiresAt?.toISOString() ?? null,
    idempotency_key: i.idempotencyKey ?? null,
    request_hash: i.requestHash ?? null,
    policy: i.policy ?? "at_least_once",
  }));
  return Prisma.sql`
    INSERT INTO deliveries (id, target, message, source, session_id, inbound_message_id, run_id, expires_at, idempotency_key, request_hash, policy)
    SELECT (d.elem->>'id')::uuid, d.elem->>'target', d.elem->'message', d.elem->>'source', (d.elem->>'session_id')::uuid,
           (d.elem->>'inbound_message_id')::uuid, (d.elem->>'run_id')::uuid, (d.elem->>'expires_at')::timestamptz,
           d.elem->>'idempotency_key', d.elem->>'request_hash', d.elem->>'policy'
      FROM jsonb_array_elements(${jsonbParam(rows)}::jsonb) WITH ORDINALITY AS d(elem, ord)
     WHERE ${condition}
     ORDER BY d.ord`;
}

/** A row as pg returns DELIVERY_COLUMNS: `seq` (bigint) as a string. */
type PoolDelivery = Omit<Delivery, "seq"> & { seq: string };

const deliveryOf = (row: PoolDelivery): Delivery => ({ ...row, seq: BigInt(row.seq) });

interface ClaimRow {
  verdict: "claimed" | "taken_over" | "wait" | "done" | "expired" | "busy";
  wait_ms: number | null;
  attempts: number | null;
  sent_parts: number | null;
  target: string | null;
  message: unknown;
  policy: string | null;
  uncertain_part: number | null;
}
