import { randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import type { FakeOpenAIRequest, FakeOpenAIReply } from "../fakes/openai.fake";
import { apiClient } from "../gateway/api-client";
import { waitFor } from "../support/infra";
import { sentTo, startHarness, type Harness } from "../support/nahida-harness";
import { privateText } from "./telegram-fixtures";

// The cross-session tools end to end (issue 11): real services in-process, real Postgres and
// Redis, fake Telegram and LLM. The fake LLM is scripted per session (the request's `user`
// is the session id), so runs of several sessions can interleave in any order.

type Script = (request: FakeOpenAIRequest, last: { role: string; content?: unknown }) => FakeOpenAIReply | undefined;

function scripted(h: Harness, scripts: Map<string, Script>): void {
  h.openai.onRequest((request) => {
    const last = request.body.messages.at(-1) as { role: string; content?: unknown };
    return scripts.get(String(request.body.user))?.(request, last);
  });
}

const call = (name: string, args: Record<string, unknown>): FakeOpenAIReply => ({ toolCalls: [{ name, arguments: args }] });

/** The tool results the model was shown, in order, for one session. */
function toolResults(h: Harness, sessionId: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const r of h.openai.requests) {
    if (r.body.user !== sessionId) continue;
    for (const m of r.body.messages as { role: string; content?: unknown; tool_call_id?: string }[]) {
      if (m.role === "tool" && !seen.has(m.tool_call_id!)) {
        seen.add(m.tool_call_id!);
        out.push(String(m.content));
      }
    }
  }
  return out;
}

const ADMIN = "nhd_cross_session_admin_token_0123456789";

describe("cross-session tools: message, sessions_*, send policy", () => {
  let h: Harness;
  let db: pg.Pool;
  const scripts = new Map<string, Script>();

  const sessionOf = async (chatId: number) =>
    (await db.query<{ id: string }>("SELECT current_session_id AS id FROM chats WHERE address = $1", [`telegram:private:${chatId}`])).rows[0]?.id;
  /** Has the chat talk once (the default answer), so that it has a session; returns its id. */
  async function greet(chatId: number): Promise<string> {
    h.telegram.pushUpdate(privateText(chatId, "hi"));
    await sentTo(h, chatId, 1);
    return (await sessionOf(chatId))!;
  }
  const succeededRuns = async (laneKey: string) =>
    (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM lane_runs WHERE lane_key = $1 AND status = 'succeeded'", [laneKey])).rows[0]!.n;

  beforeAll(async () => {
    h = await startHarness("cross_session", { LANE_LEASE_MS: "1000" });
    db = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
    scripted(h, scripts);
  });
  afterAll(async () => {
    await db?.end();
    await h?.close();
  });

  it("message sends to a group once, with the attachment, and a NO_REPLY or repeated final reply is not sent again", async () => {
    const a = 410000001;
    const group = -1004100001;
    await writeFile(join(h.workspaceDir, "report.txt"), "the numbers");
    const sessionA = await greet(a);
    scripts.set(sessionA, (_r, last) =>
      last.role === "tool"
        ? { content: "NO_REPLY" }
        : call("message", { target: `telegram:group:${group}`, text: "The report is ready", attachments: [{ type: "document", path: "report.txt" }] }),
    );
    const before = await succeededRuns(`chat:telegram:private:${a}`);
    h.telegram.pushUpdate(privateText(a, "send the report to the group"));
    await waitFor(
      async () => (await db.query("SELECT 1 FROM deliveries WHERE target = $1 AND status = 'sent'", [`telegram:group:${group}`])).rowCount === 1 || undefined,
      15_000,
      "the group's delivery to be sent",
    );
    await waitFor(async () => (await succeededRuns(`chat:telegram:private:${a}`)) > before || undefined, 10_000, "A's run to commit");
    const toGroup = h.telegram.sent(group);
    expect(toGroup.some((c) => c.files?.length)).toBe(true);
    expect(toGroup.some((c) => JSON.stringify(c.params).includes("The report is ready"))).toBe(true);
    const { rows } = await db.query("SELECT source, status FROM deliveries WHERE target = $1", [`telegram:group:${group}`]);
    expect(rows).toHaveLength(1);
    expect(rows[0].source).toMatch(/^agent:[0-9a-f-]{36}$/);
    // NO_REPLY after the send: A hears nothing beyond its greeting.
    expect(h.telegram.sent(a)).toHaveLength(1);

    // The same text to its own chat by the tool, then as the final reply: sent once.
    scripts.set(sessionA, (_r, last) => (last.role === "tool" ? { content: "All done." } : call("message", { target: `telegram:private:${a}`, text: "All done." })));
    const runs = await succeededRuns(`chat:telegram:private:${a}`);
    h.telegram.pushUpdate(privateText(a, "tell me here"));
    await waitFor(async () => (await succeededRuns(`chat:telegram:private:${a}`)) > runs || undefined, 10_000, "A's second run to commit");
    await sentTo(h, a, 2);
    await waitFor(
      async () => (await db.query("SELECT 1 FROM deliveries WHERE target = $1 AND status <> 'sent'", [`telegram:private:${a}`])).rowCount === 0 || undefined,
      10_000,
      "A's deliveries to be sent",
    );
    expect(h.telegram.sent(a).map((c) => c.params.text)).toEqual(["ok", "All done."]);
  });

  it("refuses bare numbers and untyped targets with the accepted forms", async () => {
    const a = 410000002;
    const session = await greet(a);
    let step = 0;
    scripts.set(session, (_r, last) => {
      if (last.role !== "tool") return call("message", { target: "-100123", text: "guess" });
      return step++ === 0 ? call("message", { target: "telegram:123", text: "guess" }) : { content: "I could not send it." };
    });
    h.telegram.pushUpdate(privateText(a, "send it somewhere"));
    await sentTo(h, a, 2);
    const results = toolResults(h, session);
    expect(results).toHaveLength(2);
    for (const result of results) expect(result).toMatch(/typed chat address .*session:<session id>/);
    expect((await db.query("SELECT 1 FROM deliveries WHERE source LIKE 'agent:%' AND target NOT LIKE 'telegram:private:%'")).rowCount).toBe(1);
  });

  it("a run that called message and was taken over sends it once", async () => {
    const a = 410000003;
    const group = -1004100003;
    const session = await greet(a);
    scripts.delete(session);
    const lane = `chat:telegram:private:${a}`;
    const send = call("message", { target: `telegram:group:${group}`, text: "once only" });
    const before = h.openai.requests.length;
    h.openai.enqueue(send);
    h.openai.enqueue({ content: "first run, never committed", delayMs: 5_000 });
    h.openai.enqueue(send);
    h.openai.enqueue({ content: "Sent." });
    h.telegram.pushUpdate(privateText(a, "tell the group"));
    await h.openai.waitForRequests(before + 2, 10_000);
    await db.query("UPDATE lanes SET lease_token = gen_random_uuid(), lease_expires_at = now() - interval '1 second' WHERE key = $1", [lane]);
    const answers = await sentTo(h, a, 2, 20_000);
    expect(answers[1]!.params.text).toBe("Sent.");
    await sentTo(h, group, 1);
    const runs = await db.query("SELECT id, status FROM lane_runs WHERE lane_key = $1 ORDER BY started_at", [lane]);
    expect(runs.rows.map((r) => r.status)).toEqual(["succeeded", "lost", "succeeded"]);
    const { rows } = await db.query("SELECT run_id FROM deliveries WHERE target = $1", [`telegram:group:${group}`]);
    expect(rows).toEqual([{ run_id: runs.rows[2].id }]);
    expect(h.telegram.sent(group)).toHaveLength(1);
  });

  it("sessions_send enqueue runs one turn in the child, whose reply the parent waits for; record_only runs nothing", async () => {
    const parentChat = 410000010;
    const childChat = 410000011;
    const parent = await greet(parentChat);
    const child = randomUUID();
    const childLane = `named:telegram:private:${childChat}:helper`;
    await db.query("INSERT INTO sessions (id, lane_key, chat_address, channel, parent_id) VALUES ($1, $2, $3, 'telegram', $4)", [
      child,
      childLane,
      `telegram:private:${childChat}`,
      parent,
    ]);
    scripts.set(child, () => ({ content: "The answer is 42." }));
    scripts.set(parent, (_r, last) => {
      if (last.role !== "tool") return call("sessions_send", { target_session_id: child, message: "What is the answer?", mode: "enqueue", wait_seconds: 20 });
      const result = JSON.parse(String(last.content)) as { status: string; reply?: string };
      return { content: `Child said (${result.status}): ${result.reply}` };
    });
    h.telegram.pushUpdate(privateText(parentChat, "ask the helper"));
    const answers = await sentTo(h, parentChat, 2, 20_000);
    expect(answers[1]!.params.text).toBe("Child said (done): The answer is 42.");
    const [childReply] = await sentTo(h, childChat, 1);
    expect(childReply!.params.text).toBe("The answer is 42.");
    // The child's model saw the event in its own envelope, with its source, not as a user's message.
    const childRequest = h.openai.requests.find((r) => r.body.user === child)!;
    const prompt = String((childRequest.body.messages.at(-1) as { content: unknown }).content);
    expect(prompt).toMatch(new RegExp(`^\\[event from agent:[0-9a-f-]{36} \\| from session ${parent} \\| asks for a turn \\| not a message from a user\\]\\nWhat is the answer\\?$`));
    const event = await db.query("SELECT status, reply, source, depth, mode FROM session_events WHERE session_id = $1", [child]);
    expect(event.rows).toEqual([{ status: "done", reply: "The answer is 42.", source: expect.stringMatching(/^agent:/), depth: 1, mode: "enqueue" }]);
    const userTurns = await db.query("SELECT count(*)::int AS n FROM turns WHERE session_id = $1 AND role = 'user'", [child]);
    expect(userTurns.rows[0].n).toBe(0);

    // record_only: in the child's history, and no run.
    const childRuns = await succeededRuns(childLane);
    scripts.set(parent, (_r, last) =>
      last.role === "tool" ? { content: "Noted it there." } : call("sessions_send", { target_session_id: child, message: "FYI: deploy at 5", mode: "record_only" }),
    );
    h.telegram.pushUpdate(privateText(parentChat, "tell the helper about the deploy"));
    await sentTo(h, parentChat, 3);
    const recorded = await db.query("SELECT source, metadata->>'mode' AS mode FROM turns WHERE session_id = $1 AND role = 'event' AND content = 'FYI: deploy at 5'", [child]);
    expect(recorded.rows).toEqual([{ source: expect.stringMatching(/^agent:/), mode: "record_only" }]);
    expect((await db.query("SELECT status FROM session_events WHERE session_id = $1 AND mode = 'record_only'", [child])).rows).toEqual([{ status: "recorded" }]);
    expect(await succeededRuns(childLane)).toBe(childRuns);

    // The child shows in the parent's list; an unrelated session is neither listed nor readable.
    const stranger = await greet(410000012);
    scripts.set(parent, (_r, last) => {
      if (last.role !== "tool") return call("sessions_list", {});
      if (!String(last.content).includes("is not visible") && !String(last.content).includes("error")) return call("sessions_history", { session_id: stranger });
      return { content: "Checked." };
    });
    h.telegram.pushUpdate(privateText(parentChat, "who can you see?"));
    await sentTo(h, parentChat, 4);
    const [list, history] = toolResults(h, parent).slice(-2);
    const listed = (JSON.parse(list!) as { sessions: { session_id: string; parent_id: string | null; queue_depth: number }[] }).sessions;
    expect(listed.map((s) => s.session_id).sort()).toEqual([parent, child].sort());
    expect(listed.find((s) => s.session_id === child)!.parent_id).toBe(parent);
    expect(history).toMatch(/no session .* is visible here \(visibility: this session and its child sessions\)/);
  });

  it("a deny rule blocks a send, and /send off blocks sends into that chat", async () => {
    const a = 410000020;
    const b = 410000021;
    const group = -1004100020;
    const session = await greet(a);
    await greet(b);
    await db.query(`INSERT INTO policies (name, document) VALUES ('send', '{"default":"allow","rules":[{"effect":"deny","chat_type":"group"}]}')`);
    let step = 0;
    scripts.set(session, (_r, last) => {
      if (last.role !== "tool") return call("message", { target: `telegram:group:${group}`, text: "to the group" });
      return step++ === 0 ? call("message", { target: `telegram:private:${b}`, text: "to b" }) : { content: "Tried." };
    });
    h.telegram.pushUpdate(privateText(a, "send around"));
    await sentTo(h, a, 2);
    const [denied, allowed] = toolResults(h, session);
    expect(denied).toMatch(/sending to telegram:group:-1004100020 is not allowed: the send policy denies it \(rule 1\)/);
    expect(allowed).toMatch(/"delivery_id"/);
    await sentTo(h, b, 2);
    await db.query("DELETE FROM policies");

    h.telegram.pushUpdate(privateText(b, "/send off"));
    const [, , off] = await sentTo(h, b, 3);
    expect(off!.params.text).toBe("Agents of other sessions can no longer send into this chat.");
    step = 1;
    scripts.set(session, (_r, last) => (last.role !== "tool" ? call("message", { target: `telegram:private:${b}`, text: "again" }) : { content: "Tried again." }));
    h.telegram.pushUpdate(privateText(a, "send to b again"));
    await sentTo(h, a, 3);
    expect(toolResults(h, session).at(-1)).toMatch(/the target chat turned sends from other sessions off \(\/send off\)/);
    expect(h.telegram.sent(b)).toHaveLength(3);
    h.telegram.pushUpdate(privateText(b, "/send inherit"));
    const replies = await sentTo(h, b, 4);
    expect(replies[3]!.params.text).toBe("Sends into this chat follow the send policy again.");
  });
});

describe("operator events", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness("cross_operator", { NAHIDA_API_TOKEN: ADMIN });
  });
  afterAll(async () => h?.close());

  it("POST /api/sessions/:id/events enqueue: the agent answers in that chat, and the event reads done with the reply", async () => {
    const chat = 430000001;
    h.telegram.pushUpdate(privateText(chat, "hi"));
    await sentTo(h, chat, 1);
    const api = apiClient(h.nahida.gatewayAddress!, ADMIN);
    const { sessions } = (await api("GET", "/api/sessions")).body as { sessions: { id: string; chat_address: string }[] };
    const session = sessions.find((s) => s.chat_address === `telegram:private:${chat}`)!;
    h.openai.onRequest((request) => {
      const last = request.body.messages.at(-1) as { content: unknown };
      return String(last.content).startsWith("[event from api:") ? { content: "Maintenance is tonight at 22:00." } : undefined;
    });
    const accepted = await api("POST", `/api/sessions/${session.id}/events`, { message: "Tell the user about tonight's maintenance.", mode: "enqueue" });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ status: "queued" });
    const [, told] = await sentTo(h, chat, 2);
    expect(told!.params.text).toBe("Maintenance is tonight at 22:00.");
    const state = await waitFor(
      async () => {
        const got = await api("GET", `/api/sessions/${session.id}/events/${accepted.body.event_id}`);
        return got.body.status === "done" ? got.body : undefined;
      },
      10_000,
      "the event to read done",
    );
    expect(state).toMatchObject({ status: "done", reply: "Maintenance is tonight at 22:00.", source: expect.stringMatching(/^api:/), run_id: expect.any(String) });
  });
});

describe("cross-session loop guard", () => {
  let h: Harness;
  let db: pg.Pool;
  beforeAll(async () => {
    h = await startHarness("cross_loop", { LANE_LEASE_MS: "1000", AGENT_SESSION_VISIBILITY: "all", AGENT_EVENT_MAX_DEPTH: "2" });
    db = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
  });
  afterAll(async () => {
    await db?.end();
    await h?.close();
  });

  it("a chain of agent events between two sessions stops at the depth limit with the reason recorded", async () => {
    const p = 420000001;
    const q = 420000002;
    const sessions = new Map<number, string>();
    for (const chat of [p, q]) {
      h.telegram.pushUpdate(privateText(chat, "hi"));
      await sentTo(h, chat, 1);
      sessions.set(chat, (await db.query("SELECT current_session_id AS id FROM chats WHERE address = $1", [`telegram:private:${chat}`])).rows[0].id);
    }
    const other = (id: string) => (id === sessions.get(p) ? sessions.get(q)! : sessions.get(p)!);
    // Each session passes every event on to the other: an endless ping-pong without the guard.
    h.openai.onRequest((request) => {
      const last = request.body.messages.at(-1) as { role: string };
      if (last.role === "tool") return { content: "passed it on" };
      return call("sessions_send", { target_session_id: other(String(request.body.user)), message: "ping", mode: "enqueue" });
    });
    h.telegram.pushUpdate(privateText(p, "start the ping-pong"));
    // The marker: the refusal, recorded as the tool result of the run at the limit.
    const refusal = await waitFor(
      async () => (await db.query("SELECT session_id::text AS session_id, content FROM turns WHERE role = 'tool' AND content LIKE '%chains stop at 2%'")).rows[0],
      20_000,
      "the loop guard's refusal",
    );
    expect(refusal.content).toMatch(/already 2 agent events deep/);
    const events = await db.query("SELECT depth, session_id::text AS session_id FROM session_events ORDER BY depth");
    expect(events.rows).toEqual([
      { depth: 1, session_id: sessions.get(q) },
      { depth: 2, session_id: sessions.get(p) },
    ]);
    // Nothing is left running or queued after the refusal.
    await waitFor(
      async () => (await db.query("SELECT 1 FROM lane_items WHERE status IN ('pending', 'running')")).rowCount === 0 || undefined,
      10_000,
      "the lanes to be idle",
    );
    expect((await db.query("SELECT count(*)::int AS n FROM session_events")).rows[0].n).toBe(2);
  });
});
