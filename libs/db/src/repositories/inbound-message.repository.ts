import { DEFAULT_DEDUPE_WINDOW_MS, type InboundMessage as InboundMessageContract, type LaneItemKind, type MessageContext } from "@nahida/contracts";
import type { Database, PrismaClient, Tx } from "../database";
import { laneAppendCtes } from "../lane-append";
import { jsonbParam, type HotStatements } from "../statements";
import { Prisma } from "../generated/prisma/client";

export interface StoredInbound {
  id: string;
  /** False when the platform delivered this message before (same channel and dedupe key). */
  created: boolean;
  /** True when this call put the message in its lane (the lane needs a wake). */
  queued: boolean;
  /** Where it went in its lane, when queued: its sequence number and the lane's mode (`interrupt` supersedes the run in progress). */
  lane: { seq: bigint; mode: string } | null;
}

/**
 * Whether a stored message goes into its chat's lane: `always` (a private chat, a mention,
 * a command), `if_trigger_always` (a group message nobody addressed: only when the chat's
 * trigger mode is `always`), `never` (a command for another bot).
 */
export type LaneAppend = "always" | "if_trigger_always" | "never";

export interface InboundRecord {
  id: string;
  channel: string;
  chatAddress: string;
  message: InboundMessageContract;
  context: MessageContext;
  /** When the ingress stored it (server clock). */
  receivedAt: Date;
}

const INBOUND: LaneItemKind = "inbound";

/** Normalized platform messages, stored before the platform is acknowledged. */
export class InboundMessageRepository {
  private readonly prisma: PrismaClient;
  private readonly statements: HotStatements;

  constructor(db: Pick<Database, "prisma" | "statements">) {
    this.prisma = db.prisma;
    this.statements = db.statements;
  }

  /**
   * Stores a platform message and, in the same statement, puts it in its chat's lane: the
   * lane row's sequence is taken under its row lock, so a lane's order is the ingress's
   * commit order and no queue hop can reorder it (docs/lanes.md). The chat row is created
   * on first contact (its display name kept current), and the chat's trigger mode is read
   * in the same statement for `lane.append = "if_trigger_always"` (a group message that
   * mentions nobody goes in only when the chat answers everything).
   *
   * Idempotent per (channel, dedupeKey): a redelivered event returns the first row's id and
   * appends nothing. Only a row with the key stored longer ago than `dedupeWindowMs` and
   * holding another message (another platform message id or chat) is another event reusing
   * the identity (Telegram re-seeds `update_id`): the old row's key is retired (suffixed with
   * its id; the row and its turns stay) and the event is stored anew, in statements taken
   * only then. A late replay of the same message (a Milky catch-up, a web page's resend)
   * stays a duplicate for as long as its row is kept (NAHIDA_RETENTION_INBOUND_DAYS). `legacyDedupeKey` is the key the same event had before keys carried
   * the account; a row stored under it within the last day (Telegram redelivers for at most
   * that long) counts as the same event, so a redelivery across the upgrade is not answered
   * twice. The lookup uses the unique index. Shim: removed in 0.2.0.
   */
  async store(input: StoreInput, lane: StoreLane, tx?: Tx): Promise<StoredInbound> {
    // On its own (the ingress's hot path) through pg directly; inside a caller's transaction through it.
    const run = (statement: Prisma.Sql) => (tx ? tx.$queryRaw<StoreRow[]>(statement) : this.statements.rows<StoreRow>(statement));
    const row = (await run(this.storeStatement(input, lane)))[0];
    if (!row) throw new Error("inbound insert returned no row");
    if (row.stale) {
      // Retire the old identity (guarded: a concurrent redelivery may have done it) and store again.
      await run(Prisma.sql`UPDATE inbound_messages SET dedupe_key = dedupe_key || '~' || id::text
                            WHERE id = ${row.id}::uuid AND dedupe_key = ${input.dedupeKey}::text RETURNING id`);
      return this.store({ ...input, dedupeWindowMs: Number.POSITIVE_INFINITY }, lane, tx);
    }
    const queued = row.lane_seq !== null;
    return { id: row.id, created: row.created, queued, lane: queued ? { seq: BigInt(row.lane_seq!), mode: row.lane_mode ?? "collect" } : null };
  }

  private storeStatement(input: StoreInput, lane: StoreLane): Prisma.Sql {
    const { message } = input;
    const windowMs = input.dedupeWindowMs ?? DEFAULT_DEDUPE_WINDOW_MS;
    // Infinity (the retry after retiring a key) never calls a row stale.
    const windowSeconds = Number.isFinite(windowMs) ? windowMs / 1000 : null;
    // Shim, removed in 0.2.0: `extra.command` is written too, for agent workers before 0.1.0.
    const body = { message, context: input.context, ...(message.command ? { extra: { command: message.command } } : {}) };
    const statement = Prisma.sql`
      WITH legacy AS (
        SELECT id FROM inbound_messages
         WHERE ${input.legacyDedupeKey ?? null}::text IS NOT NULL
           AND channel = ${message.channel}::text AND dedupe_key = ${input.legacyDedupeKey ?? null}::text
           AND received_at > now() - interval '1 day'
         LIMIT 1
      ), inserted AS (
        INSERT INTO inbound_messages (id, channel, dedupe_key, platform_message_id, chat_address, message, raw, sent_at, routed_at)
        SELECT nahida_uuid_v7(), ${message.channel}::text, ${input.dedupeKey}::text, ${message.messageId}::text, ${message.chat}::text,
               ${jsonbParam(body)}::jsonb, ${input.raw === undefined ? null : jsonbParam(input.raw)}::jsonb,
               ${new Date(message.timestamp)}::timestamptz, now()
         WHERE NOT EXISTS (SELECT 1 FROM legacy)
        ON CONFLICT (channel, dedupe_key) DO UPDATE SET channel = EXCLUDED.channel
        RETURNING id, (xmax = 0) AS created, received_at, platform_message_id, chat_address
      ), trigger AS (
        -- A plain read (no lock): a chat seen for the first time answers mentions only.
        SELECT trigger_mode FROM chats WHERE address = ${message.chat}::text
      ), ${laneAppendCtes({
        laneKey: lane.key,
        kind: INBOUND,
        refId: Prisma.sql`inserted.id::text`,
        traceparent: lane.traceparent ?? null,
        from: Prisma.sql`inserted`,
        when: Prisma.sql`inserted.created
           AND (${lane.append}::text = 'always'
                OR (${lane.append}::text = 'if_trigger_always' AND EXISTS (SELECT 1 FROM trigger WHERE trigger_mode = 'always')))`,
      })}, chat AS (
        -- Reads "item", so it runs after the lane row is locked: every writer takes lanes
        -- before chats (a run's commit does too), and two of them cannot deadlock.
        INSERT INTO chats (address, channel, display_name)
        SELECT ${message.chat}::text, ${message.channel}::text, ${message.chatDisplayName ?? null}::text
          FROM inserted LEFT JOIN (SELECT count(*) AS n FROM item) AS after_item ON true
         WHERE inserted.created
        ON CONFLICT (address) DO UPDATE SET display_name = EXCLUDED.display_name, updated_at = now()
         WHERE EXCLUDED.display_name IS NOT NULL AND chats.display_name IS DISTINCT FROM EXCLUDED.display_name
      )
      SELECT inserted.id::text AS id, inserted.created, (SELECT seq FROM item) AS lane_seq, (SELECT mode FROM lane) AS lane_mode,
             -- Stale: old, and another message (a replay of the same one, however late, stays a duplicate).
             (NOT inserted.created AND ${windowSeconds}::float8 IS NOT NULL
              AND extract(epoch FROM now() - inserted.received_at) > ${windowSeconds}::float8
              AND (inserted.platform_message_id, inserted.chat_address) IS DISTINCT FROM (${message.messageId}::text, ${message.chat}::text)) AS stale
        FROM inserted
      UNION ALL
      SELECT id::text, false, NULL, NULL, false FROM legacy`;
    return statement;
  }

  async get(id: string, tx?: Tx): Promise<InboundRecord | null> {
    const [record] = await this.getMany([id], tx);
    return record ?? null;
  }

  /** The rows for `ids`, in the order given; missing ids are skipped. */
  async getMany(ids: string[], tx?: Tx): Promise<InboundRecord[]> {
    const rows = await (tx ?? this.prisma).inboundMessage.findMany({ where: { id: { in: ids } } });
    const byId = new Map(rows.map((row) => [row.id, row]));
    return ids.flatMap((id) => {
      const row = byId.get(id);
      return row ? [inboundRecordOf(row)] : [];
    });
  }
}

/** A stored row as the record runs read. */
export function inboundRecordOf(row: { id: string; channel: string; chatAddress: string; message: unknown; receivedAt: Date }): InboundRecord {
  const body = row.message as StoredBody;
  // Shim, removed in 0.2.0: rows an ingress before 0.1.0 wrote carry the command beside the message.
  const legacyCommand = body.message?.command === undefined ? body.extra?.command : undefined;
  return {
    id: row.id,
    channel: row.channel,
    chatAddress: row.chatAddress,
    message: legacyCommand ? { ...body.message, command: legacyCommand } : body.message,
    context: body.context,
    receivedAt: row.receivedAt,
  };
}

/** What the store statement returns (`lane_seq` is a bigint: a string from pg, a BigInt from Prisma). */
/** A normalized platform message to store (`InboundMessageRepository.store`). */
export interface StoreInput {
  dedupeKey: string;
  legacyDedupeKey?: string;
  message: InboundMessageContract;
  context: MessageContext;
  raw: unknown;
  /** A row with the same key older than this, holding another message, is not this event. Default 24 hours. */
  dedupeWindowMs?: number;
}

/** Where a stored message goes: its lane, whether it goes in, and the intake's span (`traceparent`) for the run to continue. */
export interface StoreLane {
  key: string;
  append: LaneAppend;
  traceparent?: string | null;
}

interface StoreRow {
  id: string;
  created: boolean;
  lane_seq: bigint | string | null;
  lane_mode: string | null;
  /** A duplicate of a row older than the dedupe window: another event reusing the identity. */
  stale: boolean;
}

/** Shape of `inbound_messages.message`. */
interface StoredBody {
  message: InboundMessageContract;
  context: MessageContext;
  /** Written by versions before the command was part of the message; read, never written. */
  extra?: { command?: InboundMessageContract["command"] };
}
