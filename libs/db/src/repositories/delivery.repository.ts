import type { DeliveryPolicy, OutboundMessage } from "@nahida/contracts";
import type { PrismaClient, Tx } from "../database";
import type { Delivery, Prisma } from "../generated/prisma/client";

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

/**
 * Outbound sends. Rows are written in the same transaction as whatever caused them (the
 * outbox pattern); the `delivery.send` job only names the row.
 */
export class DeliveryRepository {
  constructor(private readonly prisma: PrismaClient) {}

  async create(input: NewDelivery, tx?: Tx): Promise<Delivery> {
    return (tx ?? this.prisma).delivery.create({ data: this.row(input) });
  }

  /**
   * Creates the row unless one with the same idempotency key exists, and returns whichever
   * row holds the key. `ON CONFLICT (idempotency_key) DO NOTHING` (not a failed insert) keeps
   * the caller's transaction usable, and a concurrent insert of the same key waits for the
   * other to commit; any other conflict (a reused id) is an error, not a silent skip.
   */
  async createOnce(input: NewDelivery & { id: string; idempotencyKey: string }, tx?: Tx): Promise<{ delivery: Delivery; created: boolean }> {
    const db = tx ?? this.prisma;
    const inserted = await db.$queryRaw<{ id: string }[]>`
      INSERT INTO deliveries (id, target, message, source, session_id, inbound_message_id, run_id, expires_at, idempotency_key, request_hash, policy)
      VALUES (${input.id}::uuid, ${input.target}, ${JSON.stringify(input.message)}::jsonb, ${input.source},
              ${input.sessionId ?? null}::uuid, ${input.inboundMessageId ?? null}::uuid, ${input.runId ?? null}::uuid,
              ${input.expiresAt ?? null}, ${input.idempotencyKey}, ${input.requestHash ?? null}, ${input.policy ?? "at_least_once"})
      ON CONFLICT (idempotency_key) DO NOTHING
      RETURNING id::text AS id`;
    const delivery = await db.delivery.findUnique({ where: { idempotencyKey: input.idempotencyKey } });
    if (!delivery) throw new Error(`delivery with idempotency key ${input.idempotencyKey} vanished`);
    return { delivery, created: inserted.length === 1 };
  }

  private row(input: NewDelivery) {
    return {
      ...(input.id ? { id: input.id } : {}),
      target: input.target,
      message: input.message as unknown as Prisma.InputJsonValue,
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
   * Claims a delivery for sending and counts the attempt; the claim is the record that an
   * attempt on part `sent_parts` is about to begin. A row already `sending` is only taken
   * over once its sender has been silent for `staleAfterMs` (it touches the row with every
   * accepted part and while a slow platform call runs), so two workers never send the same
   * delivery at once. The returned `attempt` fences the claim: the writes that follow only
   * land while the row is still this attempt's.
   *
   * A taken-over row's part `sent_parts` has an unknown outcome: the silent worker may have
   * died after the platform accepted it and before recording it. The part is added to
   * `uncertain_parts`, and under `at_most_once` it is skipped instead of sent again.
   */
  async begin(id: string, staleAfterMs: number): Promise<{ attempt: number; sentParts: number; uncertainPart: number | null } | null> {
    const rows = await this.prisma.$queryRaw<{ attempts: number; sent_parts: number; uncertain_part: number | null }[]>`
      WITH claimed AS (
        SELECT id, status = 'sending' AS taken_over FROM deliveries
         WHERE id = ${id}::uuid
           AND (status = 'queued' OR (status = 'sending' AND updated_at < now() - ${staleAfterMs} * interval '1 millisecond'))
           FOR UPDATE
      )
      UPDATE deliveries d
         SET status = 'sending', attempts = attempts + 1, updated_at = now(),
             uncertain_parts = CASE WHEN claimed.taken_over THEN array_append(d.uncertain_parts, d.sent_parts) ELSE d.uncertain_parts END,
             sent_parts = CASE WHEN claimed.taken_over AND d.policy = 'at_most_once' THEN d.sent_parts + 1 ELSE d.sent_parts END
        FROM claimed
       WHERE d.id = claimed.id
      RETURNING d.attempts, d.sent_parts, CASE WHEN claimed.taken_over THEN d.uncertain_parts[cardinality(d.uncertain_parts)] END AS uncertain_part`;
    const row = rows[0];
    return row ? { attempt: row.attempts, sentParts: row.sent_parts, uncertainPart: row.uncertain_part } : null;
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
    const updated = await this.prisma.$executeRaw`
      UPDATE deliveries
         SET sent_parts = ${index + 1}, platform_message_ids = array_append(platform_message_ids, ${platformMessageId}),
             updated_at = now(),
             status = CASE WHEN ${last} THEN 'sent' ELSE status END,
             sent_at = CASE WHEN ${last} THEN now() ELSE sent_at END,
             error = CASE WHEN ${last} THEN NULL ELSE error END
       WHERE id = ${id}::uuid AND attempts = ${attempt} AND status = 'sending' AND sent_parts = ${index}`;
    return updated === 1;
  }

  /**
   * The platform call for part `sent_parts` ended without an answer (a dropped connection, a
   * timeout): it may have been accepted. Lists the part as uncertain and, under
   * `at_most_once`, counts it as sent so no retry sends it again.
   */
  async markOutcomeUnknown(id: string, attempt: number): Promise<void> {
    await this.prisma.$executeRaw`
      UPDATE deliveries
         SET uncertain_parts = array_append(uncertain_parts, sent_parts),
             sent_parts = CASE WHEN policy = 'at_most_once' THEN sent_parts + 1 ELSE sent_parts END,
             updated_at = now()
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

  /** Back to `queued` while a retry waits (429, 5xx), keeping the reason visible. */
  async markWaiting(id: string, attempt: number, error: string): Promise<void> {
    await this.prisma.delivery.updateMany({ where: { id, attempts: attempt, status: "sending" }, data: { status: "queued", error } });
  }

  /** Expires a delivery that is still waiting after its TTL. */
  async expireIfDue(id: string): Promise<boolean> {
    const n = await this.prisma.$executeRaw`
      UPDATE deliveries SET status = 'expired', error = 'expired before it could be sent', updated_at = now()
       WHERE id = ${id}::uuid AND status IN ('queued', 'sending') AND sent_parts = 0
         AND expires_at IS NOT NULL AND expires_at < now()`;
    return n === 1;
  }

  /**
   * True while an earlier, still live delivery to the same target is unsent: messages to one
   * chat go out in the order they were created, one at a time.
   */
  async hasEarlierPending(delivery: Pick<Delivery, "seq" | "target">): Promise<boolean> {
    const rows = await this.prisma.$queryRaw<{ waiting: boolean }[]>`
      SELECT EXISTS (
        SELECT 1 FROM deliveries
         WHERE target = ${delivery.target} AND seq < ${delivery.seq} AND status IN ('queued', 'sending')
           AND (expires_at IS NULL OR expires_at > now())
      ) AS waiting`;
    return rows[0]?.waiting ?? false;
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
