/**
 * When and where to compact (docs/compaction.md). Defaults: compact past 0.8 of the window
 * or when the turns after the checkpoint reach `maxTurns`; keep about a quarter of the window
 * of recent turns, at least 6 and at most half of `maxTurns`; a summary of at most 1,200
 * tokens; never for fewer than 4 turns (below that it would mostly re-summarize the summary).
 */
export interface CompactionSettings {
  /** The model's context window, in tokens (NAHIDA_CONTEXT_TOKENS). */
  windowTokens: number;
  /** Compact when a prompt's estimate passes this share of the window. */
  threshold: number;
  /** Recent turns kept verbatim, by their estimated tokens. */
  keepTokens: number;
  /** ...and at least this many of them. */
  minKeepTurns: number;
  /** Fewer turns than this to summarize: no compaction. */
  minCoveredTurns: number;
  /** The summary's longest answer (`max_tokens` of the summarizer call). */
  summaryMaxTokens: number;
  /**
   * Turns after the checkpoint an agent call reads at most (AGENT_HISTORY_TURNS): reaching it
   * compacts too, so that the context never slides turn by turn and every read stays bounded.
   */
  maxTurns: number;
}

export function defaultCompactionSettings(o: { windowTokens: number; threshold?: number; maxTurns: number }): CompactionSettings {
  return { windowTokens: o.windowTokens, threshold: o.threshold ?? 0.8, keepTokens: Math.floor(o.windowTokens / 4), minKeepTurns: 6, minCoveredTurns: 4, summaryMaxTokens: 1_200, maxTurns: o.maxTurns };
}

/** A stored turn as the plan sees it. */
export interface PlannedTurn {
  /** Its estimated tokens as rendered. */
  tokens: number;
  /** A user message or an event that speaks to the model: a context may start here (never inside a tool exchange). */
  startsWindow: boolean;
}

export type CutPlan =
  /** Summarize turns `[0, keepFrom)`, keep `[keepFrom, end)`; `tokensAfter` estimates the prompt then. */
  | { kind: "cut"; keepFrom: number; tokensAfter: number }
  | { kind: "skip"; reason: string };

/**
 * Where to cut the history after the current checkpoint (`turns`, oldest first), given the
 * tokens everything else in the prompt costs (`otherTokens`: system prompt, tools, the run's
 * new turns). The kept part starts at a turn that can start a context; the cut is refused
 * when too little would be summarized or the result would still pass the threshold.
 */
export function planCut(turns: readonly PlannedTurn[], otherTokens: number, s: CompactionSettings): CutPlan {
  let keepFrom = turns.length;
  let kept = 0;
  const maxKeep = Math.max(s.minKeepTurns, Math.floor(s.maxTurns / 2));
  while (keepFrom > 0) {
    const older = turns[keepFrom - 1]!;
    const keeping = turns.length - keepFrom;
    if (keeping >= s.minKeepTurns && (kept + older.tokens > s.keepTokens || keeping >= maxKeep)) break;
    kept += older.tokens;
    keepFrom--;
  }
  // Never between a tool call and its result: back to a turn a context may start at.
  while (keepFrom > 0 && keepFrom < turns.length && !turns[keepFrom]!.startsWindow) {
    keepFrom--;
    kept += turns[keepFrom]!.tokens;
  }
  if (keepFrom < s.minCoveredTurns) return { kind: "skip", reason: `only ${keepFrom} turn${keepFrom === 1 ? "" : "s"} before the recent ones to summarize` };
  const tokensAfter = otherTokens + s.summaryMaxTokens + kept;
  if (tokensAfter > s.threshold * s.windowTokens) {
    return { kind: "skip", reason: `the ${turns.length - keepFrom} recent turns alone come to about ${kept} tokens: a summary of the rest would not bring the prompt under ${Math.round(s.threshold * s.windowTokens)}` };
  }
  return { kind: "cut", keepFrom, tokensAfter };
}

/**
 * The turns that still fit `budgetTokens` when nothing else helps (the compaction was
 * skipped or failed): the newest ones, from a turn a context may start at.
 */
export function fitTurns(turns: readonly PlannedTurn[], budgetTokens: number): number {
  let from = turns.length;
  let used = 0;
  while (from > 0 && used + turns[from - 1]!.tokens <= budgetTokens) used += turns[--from]!.tokens;
  while (from < turns.length && !turns[from]!.startsWindow) from++;
  return from;
}
