import type { Cluster, Redis } from "ioredis";
import { newRowId, type CompactionReason, type Turn } from "@nahida/db";
import { withSpan, type CompactionMetrics } from "@nahida/observability";
import type { ChatMessage, LlmClient } from "../agent/llm.client";
import type { ContextBuilder, RenderableTurn } from "../context/context-builder";
import { compactionEffect } from "../run/effects/compaction.effect";
import type { Run, SessionHistory } from "../run/run";
import { fitTurns, planCut, type CompactionSettings, type PlannedTurn } from "./compaction-plan";
import { checkSummary, checkpointHeader, coveredFacts, summaryRequest, type CoveredFacts } from "./summarizer";
import { estimateMessage, estimateMessages, estimateTokens } from "./token-estimate";

export interface CompactorOptions {
  llm: LlmClient;
  contextBuilder: ContextBuilder;
  settings: CompactionSettings;
  /** Estimated tokens of the tool specs sent with every request. */
  toolsTokens: number;
  /** Where a failed summary's backoff is kept, so a failing summarizer is not called on every message. */
  redis: Redis | Cluster;
  prefix: string;
  /** How long after a failed summary the session is only truncated. Default 10 minutes. */
  backoffMs?: number;
  metrics?: CompactionMetrics;
}

/** What an agent call builds its prompt from, and the prompt. */
export interface Prepared {
  history: SessionHistory;
  messages: ChatMessage[];
  /** Whether the prompt is other than the history as read (compacted or cut): a retry after an overflow is pointless otherwise. */
  changed: boolean;
}

const DEFAULT_BACKOFF_MS = 10 * 60_000;
/** The share of the window the summarizer's request may take. */
const SUMMARIZER_SHARE = 0.6;
/** Room for the checkpoint's header line and the summarizer's instructions (the header's lists are capped). */
const HEADER_ALLOWANCE = 400;
/** Less room than this for the transcript: no summary is worth making. */
const MIN_TRANSCRIPT_TOKENS = 1_000;
/** When even a compaction cannot help: the prompt is cut to this share of the window. */
const HARD_LIMIT = 0.95;

const backoffKey = (prefix: string, sessionId: string) => `${prefix}:compaction:backoff:${sessionId}`;

/**
 * History compaction (docs/compaction.md): before a model call whose prompt passes the
 * threshold of the window, or after the API said it overflowed, the oldest turns after the
 * current checkpoint are summarized into a new checkpoint, written in the run's commit. At
 * most one a run; none when it would not bring the prompt under the threshold; a failed
 * summary leaves the call to a cut prompt and is tried again only after a backoff.
 */
export function createCompactor(o: CompactorOptions) {
  const s = o.settings;

  async function build(history: SessionHistory, fresh: RenderableTurn[]): Promise<ChatMessage[]> {
    return o.contextBuilder.build(history.turns, fresh, history.compaction);
  }

  /** The summary of `covered` (after the previous checkpoint), or why there is none. */
  async function summarize(
    run: Run,
    sessionId: string,
    previous: SessionHistory["compaction"],
    covered: Turn[],
  ): Promise<{ ok: true; summary: string; facts: CoveredFacts } | { ok: false; reason: string }> {
    const facts = coveredFacts(covered, previous?.facts ?? null);
    const coveredTurns = (previous?.coveredTurns ?? 0) + covered.length;
    // The summarizer's request must fit the window too: the transcript gets what the rest leaves.
    const budgetTokens = Math.floor(s.windowTokens * SUMMARIZER_SHARE) - s.summaryMaxTokens - HEADER_ALLOWANCE - (previous === null ? 0 : estimateTokens(previous.summary));
    if (budgetTokens < MIN_TRANSCRIPT_TOKENS) return { ok: false, reason: `the window (${s.windowTokens} tokens) leaves too little room to summarize in` };
    const request = summaryRequest({ previous: previous?.summary ?? null, covered: o.contextBuilder.render(covered).map((r) => r.message), facts, maxTokens: s.summaryMaxTokens, budgetTokens });
    try {
      const completion = await o.llm.complete({ messages: request, tools: [], user: sessionId, signal: run.lane.signal, maxTokens: s.summaryMaxTokens });
      const checked = checkSummary(completion.content);
      return checked.ok ? { ok: true, summary: `${checkpointHeader(facts, coveredTurns)}\n${checked.summary}`, facts } : checked;
    } catch (error) {
      if (run.lane.signal.aborted) throw error;
      return { ok: false, reason: `the summarizer call failed: ${(error as Error).message}` };
    }
  }

  /** Summarizes the turns before `keepFrom` into a checkpoint of the run; the history after it, or null when the summary failed. */
  async function compact(run: Run, sessionId: string, history: SessionHistory, keepFrom: number, tokens: { before: number; after: number }, reason: CompactionReason): Promise<SessionHistory | null> {
    const covered = history.turns.slice(0, keepFrom);
    const summary = await withSpan("compact_session", { attributes: { "nahida.session.id": sessionId, "nahida.compaction.reason": reason, "nahida.compaction.turns": covered.length } }, () =>
      summarize(run, sessionId, history.compaction, covered),
    );
    if (!summary.ok) {
      o.metrics?.compactions.inc({ reason, outcome: "failed" });
      await o.redis.set(backoffKey(o.prefix, sessionId), summary.reason, "PX", o.backoffMs ?? DEFAULT_BACKOFF_MS);
      run.logger.warn({ sessionId, reason: summary.reason }, "compaction failed; the prompt is cut instead, and compaction is tried again later");
      return null;
    }
    const checkpoint = {
      id: newRowId(),
      sessionId,
      // The turns this checkpoint summarized; its summary carries the previous checkpoint's.
      fromSeq: covered[0]!.seq,
      throughSeq: covered.at(-1)!.seq,
      coveredTurns: (history.compaction?.coveredTurns ?? 0) + covered.length,
      summary: summary.summary,
      facts: summary.facts,
      tokensBefore: tokens.before,
      tokensAfter: tokens.after,
      model: o.llm.model,
      reason,
      runId: run.id,
    };
    run.uow.emit(compactionEffect, checkpoint);
    o.metrics?.compactions.inc({ reason, outcome: "compacted" });
    o.metrics?.tokens.observe({ phase: "before" }, tokens.before);
    o.metrics?.tokens.observe({ phase: "after" }, tokens.after);
    run.logger.info({ sessionId, reason, coveredTurns: covered.length, tokensBefore: tokens.before, tokensAfter: tokens.after }, "session compacted");
    return { compaction: checkpoint, turns: history.turns.slice(keepFrom) };
  }

  /**
   * The history's turns as the plan sees them (an unreadable turn is not planned), their
   * tokens, and a planned index as an index of the stored turns.
   */
  function plannedTurns(history: SessionHistory): { planned: PlannedTurn[]; turnTokens: number; stored(index: number): number } {
    const rendered = o.contextBuilder.render(history.turns);
    const planned = rendered.map((r) => ({ tokens: estimateMessage(r.message), startsWindow: r.startsWindow }));
    return {
      planned,
      turnTokens: planned.reduce((n, t) => n + t.tokens, 0),
      stored: (index) => (index >= rendered.length ? history.turns.length : history.turns.indexOf(rendered[index]!.stored as Turn)),
    };
  }

  return {
    /**
     * `/compact`: summarizes the session's history now, whatever its size, keeping the recent
     * turns; the reason when there is nothing to summarize or the summary failed.
     */
    async compactNow(run: Run, sessionId: string): Promise<{ ok: true; coveredTurns: number; tokensBefore: number; tokensAfter: number } | { ok: false; reason: string }> {
      if (run.compactionOf(sessionId) !== null) return { ok: false, reason: "this conversation was just compacted" };
      const backoff = await o.redis.get(backoffKey(o.prefix, sessionId));
      if (backoff !== null) return { ok: false, reason: `the last attempt did not work out (${backoff}); try again later` };
      const history = await run.history(sessionId);
      const messages = await build(history, []);
      const total = estimateMessages(messages) + o.toolsTokens;
      const { planned, turnTokens, stored } = plannedTurns(history);
      const other = total - turnTokens - estimateCheckpoint(history) + HEADER_ALLOWANCE;
      // Whatever the size: keep the recent turns (by count), summarize the rest.
      const plan = planCut(planned, other, { ...s, keepTokens: 0, threshold: Number.POSITIVE_INFINITY });
      if (plan.kind === "skip") {
        o.metrics?.compactions.inc({ reason: "command", outcome: "skipped" });
        return { ok: false, reason: plan.reason };
      }
      const keepFrom = stored(plan.keepFrom);
      const next = await compact(run, sessionId, history, keepFrom, { before: total, after: plan.tokensAfter }, "command");
      if (!next) return { ok: false, reason: "the summary failed; try again later" };
      return { ok: true, coveredTurns: keepFrom, tokensBefore: total, tokensAfter: plan.tokensAfter };
    },

    /**
     * The prompt of an agent call of `sessionId`: compacted first when it passes the
     * threshold (or, with `overflow`, because the API refused it), cut to fit the window
     * when nothing else helps.
     */
    async prepare(run: Run, sessionId: string, history: SessionHistory, fresh: RenderableTurn[], reason: "threshold" | "overflow"): Promise<Prepared> {
      const messages = await build(history, fresh);
      const total = estimateMessages(messages) + o.toolsTokens;
      const full = history.turns.length >= s.maxTurns;
      if (reason === "threshold" && total <= s.threshold * s.windowTokens && !full) return { history, messages, changed: false };
      const { planned, turnTokens, stored } = plannedTurns(history);
      const other = total - turnTokens;
      // The API counted more than the estimate: keep at most half of what there is.
      const settings = reason === "overflow" ? { ...s, keepTokens: Math.min(s.keepTokens, Math.floor(turnTokens / 2)) } : s;
      let next: SessionHistory | null = null;
      if (run.compactionOf(sessionId) === null) {
        // The backoff holds for an overflow too: a broken summarizer is not called on every message.
        const backoff = await o.redis.get(backoffKey(o.prefix, sessionId));
        const candidate = backoff === null ? planCut(planned, other - estimateCheckpoint(history) + HEADER_ALLOWANCE, settings) : null;
        // After an overflow a plan must shrink what the API refused, by its own estimate too.
        const plan =
          candidate?.kind === "cut" && reason === "overflow" && candidate.tokensAfter > other + turnTokens * 0.75 ? { kind: "skip" as const, reason: "a summary would not shrink the prompt by a quarter" } : candidate;
        if (backoff !== null) o.metrics?.compactions.inc({ reason, outcome: "backoff" });
        else if (plan!.kind === "skip") {
          o.metrics?.compactions.inc({ reason, outcome: "skipped" });
          run.logger.info({ sessionId, reason: plan!.reason }, "compaction skipped");
          // It would not help now; looking again on every message would only repeat this line.
          await o.redis.set(backoffKey(o.prefix, sessionId), plan!.reason, "PX", o.backoffMs ?? DEFAULT_BACKOFF_MS);
        } else if (plan!.kind === "cut") {
          next = await compact(run, sessionId, history, stored(plan!.keepFrom), { before: total, after: plan!.tokensAfter }, reason);
        }
      }
      if (next) return { history: next, messages: await build(next, fresh), changed: true };
      // Nothing compacted: keep the newest turns that fit, dropping the oldest.
      const budget = reason === "overflow" ? Math.min(s.threshold * s.windowTokens - other, turnTokens / 2) : HARD_LIMIT * s.windowTokens - other;
      const from = stored(fitTurns(planned, budget));
      if (from === 0) return { history, messages, changed: false };
      o.metrics?.truncations.inc();
      run.logger.warn({ sessionId, droppedTurns: from }, "prompt cut to fit the model's window: its oldest turns are left out");
      const cut = { compaction: history.compaction, turns: history.turns.slice(from) };
      return { history: cut, messages: await build(cut, fresh), changed: true };
    },
  };
}

export type Compactor = ReturnType<typeof createCompactor>;

/** The checkpoint message's estimate (replaced by the new summary when compacting). */
function estimateCheckpoint(history: SessionHistory): number {
  return history.compaction ? estimateMessage({ role: "system", content: history.compaction.summary }) : 0;
}
