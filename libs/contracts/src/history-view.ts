import { readTurn } from "./turns";
import type { HistoryMessage, HistoryView } from "./api";

/** Longest message content the history view returns. */
export const HISTORY_MESSAGE_MAX_CHARS = 2000;

const REASONING_BLOCK = /<(think|thinking|reasoning)>[\s\S]*?(<\/\1>|$)/gi;
const DATA_URL = /data:[\w.+-]+\/[\w.+-]+;base64,[A-Za-z0-9+/=]+/g;
const BASE64_RUN = /[A-Za-z0-9+/]{256,}={0,2}/g;
const URL_PATTERN = /https?:\/\/[^\s<>"')\]]+/g;
// Query parameters of pre-signed and expiring URLs (S3, GCS, Azure SAS, CDN tokens).
const TEMPORARY_URL_PARAM = /[?&](x-amz-signature|x-amz-credential|x-goog-signature|signature|sig|se|expires|token|access_token)=/i;

/**
 * The operator/agent view of stored text: reasoning blocks, base64 payloads and temporary
 * URLs removed, then cut to {@link HISTORY_MESSAGE_MAX_CHARS}. `changed` says whether
 * anything was removed or cut.
 */
export function sanitizeHistoryText(text: string, maxChars = HISTORY_MESSAGE_MAX_CHARS): { text: string; changed: boolean } {
  let out = text
    .replace(REASONING_BLOCK, "")
    .replace(DATA_URL, "[base64 data removed]")
    // A long run counts as base64 only if it mixes cases and digits, unlike a long word or hash.
    .replace(BASE64_RUN, (run) => (/[a-z]/.test(run) && /[A-Z]/.test(run) && /\d/.test(run) ? "[base64 data removed]" : run))
    .replace(URL_PATTERN, (url) => (TEMPORARY_URL_PARAM.test(url) ? "[temporary URL removed]" : url));
  let changed = out !== text;
  if (out.length > maxChars) {
    // Never cut a surrogate pair in half.
    let cut = maxChars - 1;
    const code = out.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) cut--;
    out = `${out.slice(0, cut)}…`;
    changed = true;
  }
  return { text: out.trim() === "" && text.trim() !== "" ? "[content removed]" : out, changed };
}

/** A stored turn as the history view reads it (the database row's shape). */
export interface StoredTurn {
  id: string;
  /** Its place in the ledger's order; compared with a checkpoint's cut. */
  seq: bigint;
  role: string;
  content: string;
  source: string;
  metadata: unknown;
  createdAt: Date;
}

/**
 * The filtered history view (SPEC §4): content cut to 2000 characters with base64,
 * temporary URLs and reasoning removed; raw events and provider payloads (tool arguments)
 * never included. Returns whether anything was cut.
 */
export function historyMessage(turn: StoredTurn, summarized: readonly SummarizedRange[] = []): { message: HistoryMessage; changed: boolean } {
  const { text, changed } = sanitizeHistoryText(turn.content);
  // A turn whose metadata cannot be read is still shown, with its role and content only.
  const read = readTurn(turn);
  const typed = read.ok ? read.value : null;
  const context = typed?.role === "user" ? typed.metadata.message_context : undefined;
  const toolCalls = typed?.role === "assistant" ? typed.metadata.tool_calls?.map((c) => ({ name: c.function.name })) : undefined;
  return {
    message: {
      id: turn.id,
      role: turn.role,
      content: text,
      source: turn.source,
      created_at: turn.createdAt.toISOString(),
      ...(context ? { context } : {}),
      ...(toolCalls?.length ? { tool_calls: toolCalls } : {}),
      ...(typed?.role === "tool" && typed.metadata.name ? { tool_name: typed.metadata.name } : {}),
      compacted: summarized.some((r) => turn.seq >= r.fromSeq && turn.seq <= r.throughSeq),
    },
    changed,
  };
}

/** The turns one compaction checkpoint summarized. */
export interface SummarizedRange {
  fromSeq: bigint;
  throughSeq: bigint;
}

/** A compaction checkpoint as the history view names it. */
export interface StoredCompaction {
  id: string;
  throughSeq: bigint;
  coveredTurns: number;
  reason: string;
  summary: string;
  createdAt: Date;
}

/**
 * A page of stored turns as the filtered history view: the REST API and the agent's tool
 * serve the same. Every turn is there; those a checkpoint's summary stands in for are
 * marked `compacted` (a turn before the newest cut that no summary covers is neither marked
 * nor in the model's context: docs/compaction.md).
 */
export function historyPageView(
  page: { turns: readonly StoredTurn[]; total: number },
  offset: number,
  compaction: { newest: StoredCompaction; summarized: readonly SummarizedRange[] } | null = null,
): HistoryView {
  const views = page.turns.map((turn) => historyMessage(turn, compaction?.summarized));
  const more = offset + page.turns.length < page.total;
  return {
    messages: views.map((v) => v.message),
    total: page.total,
    truncated: more || views.some((v) => v.changed),
    compaction: compaction
      ? {
          id: compaction.newest.id,
          covered_turns: compaction.newest.coveredTurns,
          reason: compaction.newest.reason,
          summary: sanitizeHistoryText(compaction.newest.summary, 4_000).text,
          created_at: compaction.newest.createdAt.toISOString(),
        }
      : null,
  };
}
