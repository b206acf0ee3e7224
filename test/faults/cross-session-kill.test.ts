import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { privateText } from "../e2e/telegram-fixtures";
import { waitFor } from "../support/infra";
import { startDeployment, type Deployment } from "../support/deployment";

// sessions_send is durable: the event and its lane item are in the sender's commit, so an
// agent worker SIGKILLed after that commit (here: while the target's turn runs) loses
// nothing. Another worker takes the target's lane over and answers the event once.

const LEASE_MS = 3_000;

describe("an agent worker killed between sessions_send and the target's answer", () => {
  let d: Deployment;
  beforeAll(async () => {
    d = await startDeployment("xs_kill", ["ingress-telegram", "agent-worker", "delivery"], { NAHIDA_LEASE_MS: String(LEASE_MS) });
  }, 120_000);
  afterAll(async () => d?.close());

  it("loses nothing: the child answers once and the event reads done", async () => {
    const parentChat = 440000001;
    const childChat = 440000002;
    const db = d.t.db.pool;
    d.telegram.pushUpdate(privateText(parentChat, "hi"));
    await waitFor(async () => d.telegram.sent(parentChat).length === 1 || undefined, 30_000, "the greeting's answer");
    const parent = (await db.query<{ id: string }>("SELECT current_session_id AS id FROM chats WHERE address = $1", [`telegram:private:${parentChat}`])).rows[0]!.id;
    const child = randomUUID();
    await db.query("INSERT INTO sessions (id, lane_key, chat_address, channel, parent_id) VALUES ($1, $2, $3, 'telegram', $4)", [
      child,
      `named:telegram:private:${childChat}:worker`,
      `telegram:private:${childChat}`,
      parent,
    ]);

    let childCalls = 0;
    d.openai.onRequest((request) => {
      const last = request.body.messages.at(-1) as { role: string };
      if (request.body.user === child) {
        childCalls += 1;
        // The first worker is killed while it waits for this answer.
        return childCalls === 1 ? { content: "never arrives", delayMs: 30_000 } : { content: "Child finished the work." };
      }
      if (last.role === "tool") return { content: "Handed it to the child." };
      return { toolCalls: [{ name: "sessions_send", arguments: { target_session_id: child, message: "Do the work.", mode: "enqueue" } }] };
    });
    d.telegram.pushUpdate(privateText(parentChat, "delegate the work"));
    // The sender committed (its reply went out), and the child's turn has started.
    await waitFor(async () => d.telegram.sent(parentChat).length === 2 || undefined, 30_000, "the parent's reply");
    await waitFor(async () => childCalls === 1 || undefined, 30_000, "the child's turn to start");
    await d.killAndReplace("agent-worker");

    await waitFor(async () => d.telegram.sent(childChat).length >= 1 || undefined, 30_000, "the child's answer after the takeover");
    const event = await waitFor(
      async () => (await db.query("SELECT status, reply FROM session_events WHERE session_id = $1", [child])).rows.find((r) => r.status === "done"),
      15_000,
      "the event to be done",
    );
    expect(event.reply).toBe("Child finished the work.");
    expect(d.telegram.sent(childChat).map((c) => c.params.text)).toEqual(["Child finished the work."]);
    expect((await db.query("SELECT count(*)::int AS n FROM session_events")).rows[0].n).toBe(1);
    const runs = await db.query("SELECT status FROM lane_runs WHERE lane_key = $1 ORDER BY started_at", [`named:telegram:private:${childChat}:worker`]);
    expect(runs.rows.map((r) => r.status)).toEqual(["lost", "succeeded"]);
    expect(d.crashes).toEqual([]);
  }, 120_000);
});
