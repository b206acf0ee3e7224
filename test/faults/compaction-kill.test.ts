import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { privateText } from "../e2e/telegram-fixtures";
import { waitFor } from "../support/infra";
import { TEST_SUMMARY, isSummaryRequest, prefillTurns } from "../support/ledger";
import { startDeployment, type Deployment } from "../support/deployment";

// A compaction checkpoint is an effect of its run: an agent worker SIGKILLed after it has its
// summary, while it waits for the answer it compacted for, leaves no checkpoint behind, and
// the worker that takes the lane over compacts once and answers once.

const LEASE_MS = 3_000;

describe("an agent worker killed mid-compaction", () => {
  let d: Deployment;
  beforeAll(async () => {
    d = await startDeployment("compact_kill", ["ingress-telegram", "agent-worker", "delivery"], {
      NAHIDA_LEASE_MS: String(LEASE_MS),
      NAHIDA_CONTEXT_TOKENS: "32000",
      AGENT_HISTORY_TURNS: "1000",
    });
  }, 120_000);
  afterAll(async () => d?.close());

  it("leaves no half-written checkpoint, and the next run compacts once", async () => {
    const chat = 450000001;
    const db = d.t.db.pool;
    let summaries = 0;
    let compactedCalls = 0;
    d.openai.onRequest((request) => {
      if (isSummaryRequest(request.body)) {
        summaries += 1;
        return { content: TEST_SUMMARY };
      }
      // A call after the compaction carries its summary; the first worker is killed while it waits for the first one.
      if (String((request.body.messages[1] as { content?: unknown } | undefined)?.content ?? "").startsWith("[summary of")) {
        compactedCalls += 1;
        if (compactedCalls === 1) return { content: "never arrives", delayMs: 30_000 };
      }
      return { content: `answer ${d.openai.requests.length}` };
    });
    d.telegram.pushUpdate(privateText(chat, "hi"));
    await waitFor(async () => d.telegram.sent(chat).length === 1 || undefined, 30_000, "the greeting's answer");
    const session = (await db.query<{ id: string }>("SELECT current_session_id AS id FROM chats WHERE address = $1", [`telegram:private:${chat}`])).rows[0]!.id;
    await prefillTurns(db, session, 400);

    d.telegram.pushUpdate(privateText(chat, "and now?"));
    await waitFor(async () => compactedCalls === 1 || undefined, 30_000, "the call after the compaction");
    expect(summaries).toBe(1);
    await d.killAndReplace("agent-worker");
    expect((await db.query("SELECT count(*)::int AS n FROM session_compactions")).rows[0].n).toBe(0);

    await waitFor(async () => d.telegram.sent(chat).length === 2 || undefined, 30_000, "the answer after the takeover");
    expect(summaries).toBe(2);
    const checkpoints = await db.query("SELECT reason, covered_turns FROM session_compactions WHERE session_id = $1", [session]);
    expect(checkpoints.rows).toEqual([{ reason: "threshold", covered_turns: expect.any(Number) }]);
    const runs = await db.query("SELECT status FROM lane_runs WHERE lane_key = $1 ORDER BY started_at", [`chat:telegram:private:${chat}`]);
    expect(runs.rows.map((r) => r.status)).toEqual(["succeeded", "lost", "succeeded"]);
    expect(d.telegram.sent(chat)).toHaveLength(2);
    expect(d.crashes).toEqual([]);
  }, 120_000);
});
