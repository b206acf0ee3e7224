import { v7 } from "uuid";

/**
 * A new row id: a UUIDv7 (RFC 9562), whose first 48 bits are the time in milliseconds, so ids
 * made one after another sort together (and, within this process, strictly in order). A
 * random v4 id puts every insert on a random page of the table's primary key; once the
 * ledger holds millions of rows nearly each of those pages is touched for the first time
 * since the last checkpoint and written to the WAL whole. Ids made in SQL use the same
 * layout (`nahida_uuid_v7()`, migration 20261202040000_uuid_v7).
 *
 * For the ledger's rows, written per message and kept by the million. Sessions and cron jobs
 * keep random ids: people name them by a prefix of the id (`/cron delete 1a2b`, `/status`,
 * the send policy's `session_prefix`), and the first digits of a v7 are the same for
 * everything made within the same minute. A secret or a lease token stays `randomUUID()`.
 */
export function newRowId(): string {
  return v7();
}
