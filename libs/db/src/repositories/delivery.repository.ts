import type { OutboundMessage } from "@nahida/contracts";
import type { PrismaClient, Tx } from "../database";
import type { Delivery, Prisma } from "../generated/prisma/client";


/** A `sending` row silent this long may be taken over by another worker (see `begin`). */
export const SENDING_TAKEOVER_MS = 30_000;

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
      INSERT INTO deliveries (id, target, message, source, session_id, inbound_message_id, run_id, expires_at, idempotency_key, request_hash)
      VALUES (${input.id}::uuid, ${input.target}, ${JSON.stringify(input.message)}::jsonb, ${input.source},
              ${input.sessionId ?? null}::uuid, ${input.inboundMessageId ?? null}::uuid, ${input.runId ?? null}::uuid,
              ${input.expiresAt ?? null}, ${input.idempotencyKey}, ${input.requestHash ?? null})
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
    };
  }

  async findByIdempotencyKey(idempotencyKey: string): Promise<Delivery | null> {
    return this.prisma.delivery.findUnique({ where: { idempotencyKey } });
  }

  async get(id: string): Promise<Delivery | null> {
    return this.prisma.delivery.findUnique({ where: { id } });
  }

  /**
   * Claims a delivery for sending and counts the attempt. A row already `sending` is only
   * taken over once its sender has been silent for `staleAfterMs` (it touches the row with
   * every accepted part), so two workers never send the same delivery at once.
   */
  async begin(id: string, staleAfterMs = SENDING_TAKEOVER_MS): Promise<{ sentParts: number } | null> {
    const rows = await this.prisma.$queryRaw<{ sent_parts: number }[]>`
      UPDATE deliveries SET status = 'sending', attempts = attempts + 1, updated_at = now()
       WHERE id = ${id}::uuid
         AND (status = 'queued' OR (status = 'sending' AND updated_at < now() - ${staleAfterMs} * interval '1 millisecond'))
      RETURNING sent_parts`;
    return rows[0] ? { sentParts: rows[0].sent_parts } : null;
  }

  /**
   * Records that part `index` was accepted by the platform. Guarded on `sent_parts` so a
   * retried job resumes after the last accepted part and never records one twice.
   */
  async recordPart(id: string, index: number, platformMessageId: string): Promise<void> {
    await this.prisma.$executeRaw`
      UPDATE deliveries
         SET sent_parts = ${index + 1}, platform_message_ids = array_append(platform_message_ids, ${platformMessageId}),
             updated_at = now()
       WHERE id = ${id}::uuid AND sent_parts = ${index}`;
  }

  async markSent(id: string): Promise<void> {
    await this.prisma.delivery.update({ where: { id }, data: { status: "sent", sentAt: new Date(), error: null } });
  }

  async markFailed(id: string, error: string): Promise<void> {
    await this.prisma.delivery.update({ where: { id }, data: { status: "failed", error } });
  }

  /** Back to `queued` while a retry waits (429, 5xx), keeping the reason visible. */
  async markWaiting(id: string, error: string): Promise<void> {
    await this.prisma.delivery.updateMany({ where: { id, status: "sending" }, data: { status: "queued", error } });
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
