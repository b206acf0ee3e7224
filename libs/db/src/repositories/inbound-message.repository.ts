import type { InboundMessage as InboundMessageContract, MessageContext } from "@nahida/contracts";
import type { PrismaClient, Tx } from "../database";

export interface StoredInbound {
  id: string;
  /** False when the platform delivered this message before (same channel and dedupe key). */
  created: boolean;
}

export interface InboundRecord {
  id: string;
  channel: string;
  chatAddress: string;
  message: InboundMessageContract;
  context: MessageContext;
  /** When the ingress stored it (server clock). */
  receivedAt: Date;
}

/** Normalized platform messages, stored before the platform is acknowledged. */
export class InboundMessageRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /** Idempotent per (channel, dedupeKey): a redelivered update returns the first row's id. */
  async store(
    input: {
      dedupeKey: string;
      message: InboundMessageContract;
      context: MessageContext;
      raw: unknown;
    },
    tx?: Tx,
  ): Promise<StoredInbound> {
    const db = tx ?? this.prisma;
    const { message } = input;
    const rows = await db.$queryRaw<{ id: string; created: boolean }[]>`
      INSERT INTO inbound_messages (id, channel, dedupe_key, platform_message_id, chat_address, message, raw, sent_at)
      VALUES (gen_random_uuid(), ${message.channel}, ${input.dedupeKey}, ${message.messageId}, ${message.chat},
              ${JSON.stringify({ message, context: input.context })}::jsonb,
              ${input.raw === undefined ? null : JSON.stringify(input.raw)}::jsonb, ${new Date(message.timestamp)})
      ON CONFLICT (channel, dedupe_key) DO UPDATE SET channel = EXCLUDED.channel
      RETURNING id::text AS id, (xmax = 0) AS created`;
    const row = rows[0];
    if (!row) throw new Error("inbound insert returned no row");
    return row;
  }

  /**
   * Scopes recent dedupe keys stored before keys carried the account (`update:<id>` becomes
   * `<accountId>:update:<id>`), so a platform's redelivery across the upgrade is still
   * recognised. Idempotent; returns how many rows it rewrote.
   */
  async scopeLegacyKeys(channel: string, accountId: string, legacyPrefix: string, withinMs: number): Promise<number> {
    return this.prisma.$executeRaw`
      UPDATE inbound_messages i SET dedupe_key = ${accountId} || ':' || i.dedupe_key
       WHERE i.channel = ${channel} AND starts_with(i.dedupe_key, ${legacyPrefix})
         AND i.received_at > now() - ${withinMs} * interval '1 millisecond'
         AND NOT EXISTS (SELECT 1 FROM inbound_messages o WHERE o.channel = i.channel AND o.dedupe_key = ${accountId} || ':' || i.dedupe_key)`;
  }

  async get(id: string, tx?: Tx): Promise<InboundRecord | null> {
    const [record] = await this.getMany([id], tx);
    return record ?? null;
  }

  /** Records that the message was routed (to its lane, or deliberately nowhere). */
  async markRouted(id: string): Promise<void> {
    await this.prisma.$executeRaw`UPDATE inbound_messages SET routed_at = now() WHERE id = ${id}::uuid AND routed_at IS NULL`;
  }

  /** Stored messages nobody routed within `olderThanMs` (their job was lost), oldest first. */
  async unrouted(olderThanMs: number, limit: number): Promise<string[]> {
    const rows = await this.prisma.$queryRaw<{ id: string }[]>`
      SELECT id::text AS id FROM inbound_messages
       WHERE routed_at IS NULL AND received_at < now() - ${olderThanMs} * interval '1 millisecond'
       ORDER BY received_at LIMIT ${limit}`;
    return rows.map((r) => r.id);
  }

  /** The rows for `ids`, in the order given; missing ids are skipped. */
  async getMany(ids: string[], tx?: Tx): Promise<InboundRecord[]> {
    const rows = await (tx ?? this.prisma).inboundMessage.findMany({ where: { id: { in: ids } } });
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.flatMap((id) => {
      const row = byId.get(id);
      if (!row) return [];
      const body = row.message as unknown as StoredBody;
      // Rows an ingress of the previous version wrote carry the command beside the message.
      const legacyCommand = body.message?.command === undefined ? body.extra?.command : undefined;
      return [
        { id: row.id, channel: row.channel, chatAddress: row.chatAddress, message: legacyCommand ? { ...body.message, command: legacyCommand } : body.message, context: body.context, receivedAt: row.receivedAt },
      ];
    });
  }
}

/** Shape of `inbound_messages.message`. */
interface StoredBody {
  message: InboundMessageContract;
  context: MessageContext;
  /** Written by versions before the command was part of the message; read, never written. */
  extra?: { command?: InboundMessageContract["command"] };
}
