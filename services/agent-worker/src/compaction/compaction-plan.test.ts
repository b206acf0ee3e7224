import { describe, expect, it } from "vitest";
import { defaultCompactionSettings, fitTurns, planCut, type PlannedTurn } from "./compaction-plan";
import { checkSummary, checkpointHeader, coveredFacts, SUMMARY_SECTIONS } from "./summarizer";
import { estimateTokens } from "./token-estimate";

const settings = defaultCompactionSettings({ windowTokens: 32_000, maxTurns: 100 });
/** `n` exchanges of a user turn and an answer, `tokens` each. */
const exchanges = (n: number, tokens: number): PlannedTurn[] => Array.from({ length: n * 2 }, (_, i) => ({ tokens, startsWindow: i % 2 === 0 }));

describe("where a compaction cuts", () => {
  it("keeps about a quarter of the window of recent turns and summarizes the rest", () => {
    // 8,000 tokens of 300-token turns: 26 turns, back to the user turn that starts them.
    expect(planCut(exchanges(100, 300), 3_000, settings)).toEqual({ kind: "cut", keepFrom: 174, tokensAfter: 3_000 + 1_200 + 26 * 300 });
    // Of 150-token turns, half the read's cap (50) comes first.
    expect(planCut(exchanges(100, 150), 3_000, settings)).toEqual({ kind: "cut", keepFrom: 150, tokensAfter: 3_000 + 1_200 + 50 * 150 });
  });

  it("never starts the kept turns inside a tool exchange", () => {
    const turns: PlannedTurn[] = [...exchanges(10, 100), { tokens: 100, startsWindow: true }, { tokens: 100, startsWindow: false }, { tokens: 5_000, startsWindow: false }, { tokens: 5_000, startsWindow: false }];
    const plan = planCut(turns, 1_000, { ...settings, keepTokens: 9_000, minKeepTurns: 2 });
    expect(plan).toMatchObject({ kind: "cut", keepFrom: 20 });
  });

  it("keeps at least six turns and at most half of the read's cap", () => {
    expect(planCut(exchanges(10, 10_000), 1_000, settings)).toMatchObject({ kind: "skip" });
    expect(planCut(exchanges(60, 10), 1_000, settings)).toEqual({ kind: "cut", keepFrom: 70, tokensAfter: 1_000 + 1_200 + 500 });
  });

  it("refuses to summarize fewer than four turns (a summary of a summary) and a cut that would not fit", () => {
    expect(planCut(exchanges(4, 3_000), 1_000, settings)).toEqual({ kind: "skip", reason: "only 2 turns before the recent ones to summarize" });
    const huge: PlannedTurn[] = [...exchanges(10, 100), ...exchanges(3, 9_000)];
    expect(planCut(huge, 1_000, settings)).toMatchObject({ kind: "skip", reason: expect.stringMatching(/^the 6 recent turns alone come to about 54000 tokens/) });
  });

  it("cuts the oldest turns when nothing else fits, from a turn a context may start at", () => {
    expect(fitTurns(exchanges(10, 1_000), 4_500)).toBe(16);
    expect(fitTurns(exchanges(10, 1_000), 100_000)).toBe(0);
  });
});

describe("the summary and the estimate", () => {
  it("takes a summary only with every section", () => {
    const full = SUMMARY_SECTIONS.map((s) => `## ${s}\nnone`).join("\n");
    expect(checkSummary(full)).toEqual({ ok: true, summary: full });
    expect(checkSummary(full.replace("## Identifiers\nnone", ""))).toEqual({ ok: false, reason: "the summary lacks the section Identifiers" });
    expect(checkSummary("  ")).toEqual({ ok: false, reason: "the summarizer answered nothing" });
  });

  it("counts a CJK character as a token and four other characters as one", () => {
    expect(estimateTokens("abcdefgh")).toBe(2);
    expect(estimateTokens("你好，世界")).toBe(5);
    expect(estimateTokens("hi 你好")).toBe(3);
  });
});

describe("the facts a checkpoint keeps", () => {
  const turn = (seq: number, label: string, roles: string[], at: string) =>
    ({
      id: `t${seq}`,
      seq: BigInt(seq),
      role: "user",
      content: "hi",
      source: "user",
      metadata: { message_context: { timestamp: at, channel: "telegram", chatType: "group", chatDisplayName: "Ops", senderLabel: label, roles } },
      createdAt: new Date(at),
    }) as never;

  it("merge over checkpoints: the whole time range, every chat, every participant and role change", () => {
    const first = coveredFacts([turn(1, "Alice", [], "2026-11-01T10:00:00.000Z"), turn(2, "Bob", [], "2026-11-02T10:00:00.000Z")]);
    const second = coveredFacts([turn(3, "Bob", ["admin"], "2026-11-05T10:00:00.000Z")], first);
    expect(second).toEqual({ first_at: "2026-11-01T10:00:00.000Z", last_at: "2026-11-05T10:00:00.000Z", chats: ['telegram group "Ops"'], roles: { Alice: [[]], Bob: [[], ["admin"]] } });
    expect(checkpointHeader(second, 3)).toBe(
      '[summary of the 3 earlier turns of this conversation | 2026-11-01T10:00:00.000Z to 2026-11-05T10:00:00.000Z | in telegram group "Ops" | participants: Alice [], Bob [admin] | role changes: Bob: [] → [admin] | the turns themselves stay in the session\'s stored history]',
    );
  });
});
