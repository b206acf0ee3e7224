import type { ChatTranscriptEntry } from "@nahida/contracts";
import type { PrismaClient } from "../database";

/**
 * A chat's conversation as the chat itself saw it (a web chat page after a reload): the
 * inbound messages of the chat and the deliveries to it, from the two indexes that order
 * them by chat (`inbound_messages (chat_address, received_at)`, `deliveries (target, seq)`).
 */
export class ChatTranscriptRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * The newest `limit` messages, oldest first, in one statement. A delivery counts once a
   * part of it may have been seen: sent, being sent (a page that reconnects while a part goes
   * out must not miss it; the part's id is stable, so the live copy that may follow is
   * recognised), or waiting or failed with parts out. A delivery's time is when it was sent
   * (the live frame's too), else created; `seq` orders those of the same millisecond.
   */
  async recent(chatAddress: string, limit: number): Promise<ChatTranscriptEntry[]> {
    const rows = await this.prisma.$queryRaw<ChatTranscriptEntry[]>`
      SELECT direction, id, message, at, status, sent_parts AS "sentParts" FROM (
        (SELECT 'in' AS direction, platform_message_id AS id, message->'message' AS message, received_at AS at,
                'received' AS status, 0 AS sent_parts, 0::bigint AS seq
           FROM inbound_messages WHERE chat_address = ${chatAddress}
          ORDER BY received_at DESC LIMIT ${limit})
        UNION ALL
        (SELECT 'out', id::text, message, COALESCE(sent_at, created_at), status, sent_parts, seq
           FROM deliveries WHERE target = ${chatAddress} AND (status IN ('sent', 'sending') OR sent_parts > 0)
          ORDER BY seq DESC LIMIT ${limit})
      ) AS t
      ORDER BY at DESC, seq DESC LIMIT ${limit}`;
    return rows.reverse();
  }
}
