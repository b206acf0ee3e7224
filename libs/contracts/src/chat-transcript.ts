/**
 * A message of a chat as its own page shows it: what was said in the chat, and what was
 * sent to it. The ledger reads it (`ChatTranscriptRepository`), a channel's page shows it.
 */
export interface ChatTranscriptEntry {
  /** `in`: an inbound message (its id is the platform's message id); `out`: a delivery. */
  direction: "in" | "out";
  /** The inbound message's platform id, or the delivery's id. */
  id: string;
  /** The InboundMessage or the OutboundMessage contract, as stored. */
  message: unknown;
  /** When it was received; a delivery's when it was sent, else created. */
  at: Date;
  /** A delivery's status (`sent`, `sending`, `queued`, `failed`, ...); `received` for an inbound message. */
  status: string;
  /** A delivery's parts the platform accepted so far; 0 for an inbound message. */
  sentParts: number;
}
