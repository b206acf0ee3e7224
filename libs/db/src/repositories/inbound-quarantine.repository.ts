import { createHash } from "node:crypto";
import { storableJsonCut, wellFormed } from "@nahida/contracts";
import type { PrismaClient } from "../database";
import type { InboundQuarantine } from "../generated/prisma/client";
import { newRowId } from "../ids";

/** The longest raw event kept; a longer one is cut (its digest is of the whole). */
const RAW_MAX_CHARS = 1_000_000;

export interface QuarantineEntry {
  channel: string;
  accountId: string;
  reason: string;
  /** The event as it came (parsed); kept as cleaned JSON text. */
  raw: unknown;
}

/**
 * Platform events acknowledged but not storable as messages (`inbound_quarantine`): the
 * record that makes an acknowledgement mean "recorded" whatever the event held.
 */
export class InboundQuarantineRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Keeps the event; a redelivery of the same event is recorded once (`created` false). */
  async record(entry: QuarantineEntry): Promise<{ id: string; created: boolean }> {
    // Cleaned and cut first: whatever it held, the text can be stored and stringified.
    const text = JSON.stringify(storableJsonCut(entry.raw)) ?? "null";
    const digest = createHash("sha256").update(text).digest("hex");
    const id = newRowId();
    const rows = await this.prisma.$queryRaw<{ id: string; created: boolean }[]>`
      INSERT INTO inbound_quarantine (id, channel, account_id, reason, raw, raw_digest)
      VALUES (${id}::uuid, ${wellFormed(entry.channel)}, ${wellFormed(entry.accountId)}, ${wellFormed(entry.reason).slice(0, 2_000)}, ${text.slice(0, RAW_MAX_CHARS)}, ${digest})
      ON CONFLICT (channel, account_id, raw_digest) DO UPDATE SET channel = EXCLUDED.channel
      RETURNING id::text AS id, (xmax = 0) AS created`;
    return rows[0]!;
  }

  /** The newest first, optionally of one channel. */
  async list(filter: { channel?: string; limit: number; offset: number }): Promise<{ events: InboundQuarantine[]; total: number }> {
    const where = filter.channel ? { channel: filter.channel } : {};
    const [events, total] = await Promise.all([
      this.prisma.inboundQuarantine.findMany({ where, orderBy: [{ receivedAt: "desc" }, { id: "asc" }], take: filter.limit, skip: filter.offset }),
      this.prisma.inboundQuarantine.count({ where }),
    ]);
    return { events, total };
  }
}
