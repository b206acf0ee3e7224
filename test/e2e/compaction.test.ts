import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import type { FakeOpenAIRequest } from "../fakes/openai.fake";
import { estimatePromptTokens } from "../fakes/openai.fake";
import { apiClient } from "../gateway/api-client";
import { TEST_SUMMARY, isSummaryRequest, prefillTurns as prefill } from "../support/ledger";
import { sentTo, startHarness, type Harness } from "../support/nahida-harness";
import { privateText } from "./telegram-fixtures";

const WINDOW = 32_000;
const ADMIN = "nhd_compaction_e2e_admin_token_0123456789";
const isSummary = (r: FakeOpenAIRequest) => isSummaryRequest(r.body);
const text = (m: unknown) => String((m as { content?: unknown }).content ?? "");
const hash = (value: unknown) => createHash("sha256").update(JSON.stringify(value)).digest("hex");

describe("history compaction with a 32k window", () => {
  let h: Harness;
  let db: pg.Pool;
  let summaries = 0;
  let failSummaries = false;
  let overflowMain = 0;

  beforeAll(async () => {
    h = await startHarness(
      "compaction",
      { NAHIDA_CONTEXT_TOKENS: String(WINDOW), AGENT_HISTORY_TURNS: "1000", LANE_LEASE_MS: "2000", NAHIDA_API_TOKEN: ADMIN },
      {},
      { openai: { contextWindowTokens: WINDOW } },
    );
    db = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
    h.openai.onRequest((request) => {
      if (isSummary(request)) {
        summaries++;
        return failSummaries ? { status: 500 } : { content: TEST_SUMMARY };
      }
      if (overflowMain > 0) {
        overflowMain--;
        return { status: 400, code: "context_length_exceeded", error: `This model's maximum context length is ${WINDOW} tokens.` };
      }
      return { content: `answer ${h.openai.requests.length}` };
    });
  });
  afterAll(async () => {
    await db?.end();
    await h?.close();
  });

  /** A counter of the process's `/metrics`, unlabelled. */
  async function metric(name: string): Promise<number> {
    const line = (await (await fetch(`${h.nahida.gatewayAddress}/metrics`)).text()).split("\n").find((l) => l.startsWith(`${name} `));
    return Number(line?.split(" ")[1] ?? 0);
  }

  /** Sends a message into a private chat and waits for its `n`-th answer there. */
  async function talk(chat: number, n: number, message = `message ${n}`) {
    h.telegram.pushUpdate(privateText(chat, message));
    const sent = await sentTo(h, chat, n, 20_000);
    return sent[n - 1]!.params.text as string;
  }
  const sessionOf = async (chat: number) =>
    (await db.query("SELECT current_session_id AS id FROM chats WHERE address = $1", [`telegram:private:${chat}`])).rows[0].id as string;

  /** A chat with one exchange, then `turns` more written straight into its session; its session id. */
  async function chatWithHistory(chat: number, turns: number): Promise<string> {
    await talk(chat, 1);
    const session = await sessionOf(chat);
    await prefill(db, session, turns);
    return session;
  }

  it("keeps a 400-turn session under the window: the summary request has the covered envelopes, the next request the summary and the recent turns", async () => {
    const chat = 930000001;
    const session = await chatWithHistory(chat, 400);
    const before = h.openai.requests.length;
    for (let n = 2; n <= 6; n++) await talk(chat, n);
    const requests = h.openai.requests.slice(before);

    // Every request, the summarizer's too, fits the window as the fake counts it.
    for (const r of requests) expect(estimatePromptTokens(r.body)).toBeLessThanOrEqual(WINDOW);
    const summary = requests.filter(isSummary);
    expect(summary).toHaveLength(1);
    const transcript = text(summary[0]!.body.messages[1]);
    expect(transcript).toMatch(/\[2026-11-0\d \d\d:\d\d[^\]]*Alice \(@alice\)/);
    expect(transcript).toContain("Alice (@alice) [admin]");
    expect(transcript).toContain("role changes: Alice (@alice): [] → [admin]");
    expect(transcript).toContain("telegram private");

    const rows = await db.query("SELECT covered_turns, through_seq, tokens_before, tokens_after, reason, summary FROM session_compactions WHERE session_id = $1", [session]);
    expect(rows.rows).toHaveLength(1);
    const checkpoint = rows.rows[0];
    expect(checkpoint).toMatchObject({ reason: "threshold" });
    expect(checkpoint.tokens_before).toBeGreaterThan(0.8 * WINDOW);
    expect(checkpoint.tokens_after).toBeLessThan(0.8 * WINDOW);
    expect(checkpoint.summary).toMatch(/^\[summary of the \d+ earlier turns of this conversation \| 2026-11-01T00:00:00.000Z to 20\d\d-.* \| in telegram private "Alice", telegram private \| participants: Alice \[\], Alice \(@alice\) \[admin\] \| role changes: Alice \(@alice\): \[\] → \[admin\]/);

    const main = requests.filter((r) => !isSummary(r));
    const first = main[0]!.body.messages;
    expect(text(first[1])).toBe(checkpoint.summary);
    expect(text(first.at(-1))).toContain("message 2");
    // Nothing is deleted: every turn is still stored, and the history API marks what the checkpoint covers.
    expect(Number((await db.query("SELECT count(*) FROM turns WHERE session_id = $1", [session])).rows[0].count)).toBeGreaterThanOrEqual(410);
    const api = apiClient(h.nahida.gatewayAddress!, ADMIN);
    const newest = (await api("GET", `/api/sessions/${session}/history?limit=5`)).body;
    expect(newest.total).toBeGreaterThanOrEqual(410);
    expect(newest.messages.map((m: { compacted: boolean }) => m.compacted)).toEqual([false, false, false, false, false]);
    expect(newest.compaction).toMatchObject({ covered_turns: checkpoint.covered_turns, reason: "threshold", summary: expect.stringContaining("## Decisions") });
    const oldest = (await api("GET", `/api/sessions/${session}/history?limit=5&offset=${newest.total - 5}`)).body;
    expect(oldest.messages.map((m: { compacted: boolean }) => m.compacted)).toEqual([true, true, true, true, true]);

    // Between compactions each request starts with the whole previous one, byte for byte.
    for (let i = 1; i < main.length; i++) {
      const previous = main[i - 1]!.body.messages;
      expect(hash(main[i]!.body.messages.slice(0, previous.length))).toBe(hash(previous));
    }

    // /reset forgets the summary with the turns.
    expect(await talk(chat, 7, "/reset")).toMatch(/^Cleared this session's history/);
    await talk(chat, 8);
    expect(text(h.openai.requests.at(-1)!.body.messages[1])).not.toMatch(/^\[summary of/);
    expect((await db.query("SELECT count(*)::int AS n FROM session_compactions WHERE session_id = $1", [session])).rows[0].n).toBe(0);
  });

  it("compacts once on a context-overflow answer and retries once; a second overflow fails the run with the reason, without looping", async () => {
    const chat = 930000002;
    // Under the threshold by the estimate; the API says it overflows anyway.
    const session = await chatWithHistory(chat, 120);
    const summariesBefore = summaries;
    overflowMain = 1;
    expect(await talk(chat, 2)).toMatch(/^answer \d+$/);
    expect(summaries - summariesBefore).toBe(1);
    const rows = await db.query("SELECT reason FROM session_compactions WHERE session_id = $1", [session]);
    expect(rows.rows).toEqual([{ reason: "overflow" }]);

    await prefill(db, session, 40, 1000);
    overflowMain = 2;
    const before = h.openai.requests.length;
    expect(await talk(chat, 3)).toBe("This conversation no longer fits the language model's context window, even summarized. Start a new one with /new.");
    const requests = h.openai.requests.slice(before);
    expect(requests.filter(isSummary)).toHaveLength(1);
    expect(requests.filter((r) => !isSummary(r))).toHaveLength(2);
    expect(overflowMain).toBe(0);

    // Nothing to take away (a first message that alone overflows): no pointless retry.
    overflowMain = 2;
    const fresh = h.openai.requests.length;
    expect(await talk(930000012, 1, "a first message")).toMatch(/^This conversation no longer fits/);
    expect(h.openai.requests.length - fresh).toBe(1);
    overflowMain = 0;
  });

  it("a failed summary leaves the session answering with a cut prompt, and is not tried again on the next message", async () => {
    const truncationsBefore = await metric("nahida_context_truncations_total");
    const chat = 930000003;
    const session = await chatWithHistory(chat, 400);
    failSummaries = true;
    try {
      const summariesBefore = summaries;
      const before = h.openai.requests.length;
      expect(await talk(chat, 2)).toMatch(/^answer \d+$/);
      expect(await talk(chat, 3)).toMatch(/^answer \d+$/);
      // The openai SDK retries a 500 twice: one summary attempt is three requests.
      expect(summaries - summariesBefore).toBe(3);
      for (const r of h.openai.requests.slice(before)) expect(estimatePromptTokens(r.body)).toBeLessThanOrEqual(WINDOW);
      expect((await db.query("SELECT count(*) FROM session_compactions WHERE session_id = $1", [session])).rows[0].count).toBe("0");
      const metrics = await (await fetch(`${h.nahida.gatewayAddress}/metrics`)).text();
      expect(metrics).toMatch(/nahida_compactions_total\{reason="threshold",outcome="failed"\} 1/);
      expect(metrics).toMatch(/nahida_compactions_total\{reason="threshold",outcome="backoff"\} 1/);
      expect((await metric("nahida_context_truncations_total")) - truncationsBefore).toBe(2);
    } finally {
      failSummaries = false;
    }
  });

  it("/compact summarizes the earlier conversation now, keeping the recent turns; with only those left, a second one says why not", async () => {
    const chat = 930000004;
    const session = await chatWithHistory(chat, 20);
    const summariesBefore = summaries;
    expect(await talk(chat, 2, "/compact")).toMatch(/^Summarized 16 earlier turns; the conversation now takes about \d+ tokens of the model's window instead of \d+\. Nothing is deleted\.$/);
    expect(summaries - summariesBefore).toBe(1);
    expect((await db.query("SELECT reason, covered_turns FROM session_compactions WHERE session_id = $1", [session])).rows).toEqual([{ reason: "command", covered_turns: 16 }]);
    // With the recent turns only, there is not enough left to summarize.
    expect(await talk(chat, 3, "/compact")).toBe("Nothing compacted: only 0 turns before the recent ones to summarize.");
  });
});
