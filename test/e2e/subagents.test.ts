import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import type { FakeOpenAIReply, FakeOpenAIRequest } from "../fakes/openai.fake";
import { apiClient } from "../gateway/api-client";
import { waitFor } from "../support/infra";
import { sentTo, startHarness, type Harness } from "../support/nahida-harness";
import { privateText } from "./telegram-fixtures";

// Sub-agents end to end (docs/subagents.md): real Postgres, Redis and services, a fake
// model that scripts the parent's tool calls per chat and answers each child by its task:
// `echo <text>` answers <text>; `sleep <ms> <text>` answers after <ms>; `forbidden` tries
// the tools a child must not have.

type Message = { role: string; content?: string | null; tool_calls?: { function: { name: string } }[] };
const messagesOf = (request: FakeOpenAIRequest) => request.body.messages as unknown as Message[];
const textOf = (m: Message | undefined) => (typeof m?.content === "string" ? m.content : "");

/** The task a child's request works on; undefined for a parent's request. */
function childTask(request: FakeOpenAIRequest): string | undefined {
  const first = messagesOf(request).find((m) => m.role === "user" && textOf(m).startsWith("[sub-agent task"));
  return first ? textOf(first).split("\n").slice(1).join("\n").split("\n\n")[0] : undefined;
}

function childReply(task: string, request: FakeOpenAIRequest): FakeOpenAIReply {
  const [verb, ...rest] = task.split(" ");
  if (verb === "echo") return { content: rest.join(" ") };
  if (verb === "sleep") return { content: rest.slice(1).join(" "), delayMs: Number(rest[0]) };
  if (verb === "forbidden") {
    const last = messagesOf(request).at(-1)!;
    if (last.role === "tool") return { content: "tried" };
    return {
      toolCalls: [
        { name: "message", arguments: { target: "telegram:private:1", text: "escape" } },
        { name: "sessions_send", arguments: { target_session_id: "00000000-0000-4000-8000-000000000001", message: "hi" } },
        { name: "agent_spawn", arguments: { task: "echo grandchild" } },
      ],
    };
  }
  return { content: `unknown task ${task}` };
}

/** The chat a parent's request is for, by its private chat's user (the envelope's sender). */
type ParentScript = (messages: Message[], request: FakeOpenAIRequest) => FakeOpenAIReply | undefined;

/** Tool results since the last user-role message, parsed. */
function toolResults(messages: Message[]): Record<string, unknown>[] {
  const lastUser = messages.findLastIndex((m) => m.role === "user");
  return messages.slice(lastUser + 1).flatMap((m) => (m.role === "tool" ? [JSON.parse(textOf(m)) as Record<string, unknown>] : []));
}

const lastUserText = (messages: Message[]) => textOf(messages.findLast((m) => m.role === "user"));

const ADMIN = "nhd_subagents_admin_token_0123456789abcd";

describe("sub-agents: spawn, wait, yield, stop, each result taken once", () => {
  let h: Harness;
  let db: pg.Pool;
  /** Parent scripts by a word in the user's message. */
  const scripts = new Map<string, ParentScript>();

  beforeAll(async () => {
    h = await startHarness("subagents", { NAHIDA_LEASE_MS: "2000", AGENT_SUBAGENT_MAX_RUNNING: "3", NAHIDA_API_TOKEN: ADMIN });
    db = new pg.Pool({ connectionString: h.databaseUrl, max: 3 });
    h.openai.onRequest((request) => {
      const task = childTask(request);
      if (task !== undefined) return childReply(task, request);
      const messages = messagesOf(request);
      // The script of the conversation: the first user turn of the request that names one.
      for (const m of messages) {
        if (m.role !== "user") continue;
        for (const [word, script] of scripts) if (textOf(m).includes(word)) return script(messages, request);
      }
      return undefined;
    });
  });
  afterAll(async () => {
    await db?.end();
    await h?.close();
  });

  const task = async (id: string) => (await db.query("SELECT * FROM background_tasks WHERE id = $1", [id])).rows[0];
  const tasksOf = async (chat: number) =>
    (
      await db.query(
        `SELECT t.* FROM background_tasks t JOIN chats c ON c.current_session_id = t.parent_session_id WHERE c.address = $1 ORDER BY t.created_at`,
        [`telegram:private:${chat}`],
      )
    ).rows;
  /** Requests of a parent that carried a sub-agent's result as a turn. */
  const resultTurns = (word: string) =>
    h.openai.requests.filter((r) => childTask(r) === undefined && messagesOf(r).some((m) => m.role === "user" && textOf(m).includes(word)) && /\[sub-agent .*\(task /.test(lastUserText(messagesOf(r))));
  /** Result items the parent's lane has done: the positive marker before asserting that nothing more came. */
  const resultItemsDone = async (ids: string[]) =>
    waitFor(async () => {
      const { rows } = await db.query("SELECT count(*)::int AS n FROM lane_items WHERE kind = 'subagent_result' AND ref_id = ANY($1) AND status = 'done'", [ids]);
      return rows[0].n === ids.length ? true : undefined;
    }, 20_000, "the results' lane items to be done");

  it("spawns a child that works in its own session; the parent hears its result once, as an announce turn with its source", async () => {
    const chat = 410000001;
    scripts.set("research alpha", (messages) => {
      const last = messages.at(-1)!;
      if (last.role === "user" && lastUserText(messages).includes("research alpha")) {
        return { toolCalls: [{ name: "agent_spawn", arguments: { task: "echo alpha is done", label: "alpha" } }] };
      }
      if (last.role === "tool") return { content: "Started a helper." };
      if (/\[sub-agent "alpha" \(task .*\) succeeded/.test(lastUserText(messages))) return { content: `Alpha says: ${lastUserText(messages).split("\n")[1]}` };
      return { content: "?" };
    });
    h.telegram.pushUpdate(privateText(chat, "research alpha"));
    const sent = await sentTo(h, chat, 2, 20_000);
    expect(sent.map((s) => s.params.text)).toEqual(["Started a helper.", "Alpha says: alpha is done"]);

    const [t] = await tasksOf(chat);
    expect(t).toMatchObject({ status: "succeeded", result: "alpha is done", consumed_by: "announce", adopted: true, label: "alpha", depth: 1 });
    expect(t.input_tokens).toBeGreaterThan(0);
    await resultItemsDone([t.id]);
    expect(resultTurns("research alpha")).toHaveLength(1);
    // The child's turns are in its own session; the result is an event in the parent's, with its source.
    const child = await db.query("SELECT role, content, source, metadata->>'kind' AS kind FROM turns WHERE session_id = $1 ORDER BY seq", [t.child_session_id]);
    expect(child.rows.map((r) => [r.role, r.kind])).toEqual([["event", "subagent_task"], ["assistant", null]]);
    expect(child.rows[1].content).toBe("alpha is done");
    const parentEvent = await db.query("SELECT content, source, metadata FROM turns WHERE session_id = $1 AND role = 'event'", [t.parent_session_id]);
    expect(parentEvent.rows).toEqual([
      { content: "alpha is done", source: `subagent:${t.id}`, metadata: expect.objectContaining({ kind: "subagent_result", status: "succeeded", consumed_by: "announce" }) },
    ]);
    const session = await db.query("SELECT parent_id, chat_address, lane_key FROM sessions WHERE id = $1", [t.child_session_id]);
    expect(session.rows[0]).toEqual({ parent_id: t.parent_session_id, chat_address: null, lane_key: `session:${t.parent_session_id}/sub:${t.id}` });
  });

  it("agent_yield ends the parent's turn and resumes it once, when the last child ends, with every result; a second yield with nothing pending says so", async () => {
    const chat = 410000002;
    scripts.set("fan out", (messages) => {
      const last = messages.at(-1)!;
      const user = lastUserText(messages);
      if (last.role === "user" && user.includes("fan out")) {
        return {
          toolCalls: [
            { name: "agent_spawn", arguments: { task: "echo quick result", label: "quick" } },
            { name: "sessions_spawn", arguments: { task: "sleep 1500 slow result", label: "slow", runTimeoutSeconds: 60 } },
          ],
        };
      }
      if (last.role === "tool" && toolResults(messages).length === 2) return { toolCalls: [{ name: "agent_yield", arguments: { note: "waiting for both" } }] };
      if (last.role === "user" && user.includes("yield again")) return { toolCalls: [{ name: "agent_yield", arguments: {} }] };
      if (last.role === "tool" && user.includes("yield again")) return { content: `Yield said: ${JSON.stringify(toolResults(messages)[0])}` };
      const results = messages.filter((m) => m.role === "user" && /^\[sub-agent /.test(textOf(m)));
      return { content: `Resumed with ${results.length}: ${results.map((m) => textOf(m).split("\n")[1]).join(" + ")}` };
    });
    h.telegram.pushUpdate(privateText(chat, "fan out"));
    const [resumed] = await sentTo(h, chat, 1, 20_000);
    expect(resumed!.params.text).toBe("Resumed with 2: quick result + slow result");
    const tasks = await tasksOf(chat);
    expect(tasks.map((t) => [t.label, t.status, t.consumed_by])).toEqual([
      ["quick", "succeeded", "resume"],
      ["slow", "succeeded", "resume"],
    ]);
    await resultItemsDone(tasks.map((t) => t.id));
    // Once: the quick result's item came first and waited for the slow one.
    expect(resultTurns("fan out")).toHaveLength(1);
    expect(h.telegram.sent(chat)).toHaveLength(1);

    h.telegram.pushUpdate(privateText(chat, "yield again"));
    const sent = await sentTo(h, chat, 2, 20_000);
    expect(sent[1]!.params.text).toMatch(/^Yield said: \{"error":"agent_yield failed: nothing to wait for/);
  });

  it("agent_wait returns a finished child's result inline, and no announce turn follows", async () => {
    const chat = 410000003;
    scripts.set("wait for beta", (messages) => {
      const last = messages.at(-1)!;
      if (last.role === "user") return { toolCalls: [{ name: "agent_spawn", arguments: { task: "echo beta result", label: "beta" } }] };
      const results = toolResults(messages);
      if (results.length === 1) return { toolCalls: [{ name: "agent_wait", arguments: { task_ids: [results[0]!.task_id], timeout_seconds: 20 } }] };
      const waited = results[1] as { tasks: { status: string; result?: string }[] };
      return { content: `Waited: ${waited.tasks[0]!.status} ${waited.tasks[0]!.result}` };
    });
    h.telegram.pushUpdate(privateText(chat, "wait for beta"));
    const [reply] = await sentTo(h, chat, 1, 20_000);
    expect(reply!.params.text).toBe("Waited: succeeded beta result");
    const [t] = await tasksOf(chat);
    expect(t.consumed_by).toBe("wait");
    await resultItemsDone([t.id]);
    expect(resultTurns("wait for beta")).toHaveLength(0);
    expect(h.telegram.sent(chat)).toHaveLength(1);
  });

  it("a child is offered no spawn, message or sessions_send, and is refused them with a clear error", async () => {
    const chat = 410000004;
    scripts.set("try forbidden", (messages) => {
      const last = messages.at(-1)!;
      if (last.role === "user" && lastUserText(messages).includes("try forbidden")) {
        return { toolCalls: [{ name: "agent_spawn", arguments: { task: "forbidden", label: "rogue" } }] };
      }
      return { content: last.role === "tool" ? "ok" : "heard" };
    });
    h.telegram.pushUpdate(privateText(chat, "try forbidden"));
    await sentTo(h, chat, 2, 20_000);
    const [t] = await tasksOf(chat);
    expect(t.status).toBe("succeeded");
    const childRequest = h.openai.requests.find((r) => childTask(r) === "forbidden")!;
    const offered = (childRequest.body.tools ?? []).map((tool) => (tool as { function: { name: string } }).function.name);
    expect(offered).toEqual(expect.arrayContaining(["current_time", "sessions_history"]));
    for (const denied of ["message", "sessions_send", "agent_spawn", "agent_wait", "agent_yield", "agent_list", "agent_stop"]) expect(offered).not.toContain(denied);
    const tools = await db.query("SELECT content FROM turns WHERE session_id = $1 AND role = 'tool' ORDER BY seq", [t.child_session_id]);
    expect(tools.rows.map((r) => JSON.parse(r.content).error)).toEqual([
      "message is not permitted to a sub-agent (no spawning, message or sessions_send)",
      "sessions_send is not permitted to a sub-agent (no spawning, message or sessions_send)",
      "agent_spawn is not permitted to a sub-agent (no spawning, message or sessions_send)",
    ]);
    expect((await db.query("SELECT count(*)::int AS n FROM background_tasks WHERE parent_session_id = $1", [t.child_session_id])).rows[0].n).toBe(0);
    expect((await db.query("SELECT count(*)::int AS n FROM deliveries WHERE target = 'telegram:private:1'")).rows[0].n).toBe(0);
  });

  it("a child past its timeout ends timed_out and the parent is told once", async () => {
    const chat = 410000005;
    scripts.set("slow gamma", (messages) => {
      const last = messages.at(-1)!;
      if (last.role === "user" && lastUserText(messages).includes("slow gamma")) {
        return { toolCalls: [{ name: "agent_spawn", arguments: { task: "sleep 30000 too late", label: "gamma", timeout_seconds: 1 } }] };
      }
      if (last.role === "tool") return { content: "Gamma started." };
      return { content: `Told: ${lastUserText(messages).split("\n")[0]}` };
    });
    h.telegram.pushUpdate(privateText(chat, "slow gamma"));
    const sent = await sentTo(h, chat, 2, 20_000);
    expect(sent[1]!.params.text).toMatch(/^Told: \[sub-agent "gamma" \(task [0-9a-f-]+\) timed_out/);
    const [t] = await tasksOf(chat);
    expect(t).toMatchObject({ status: "timed_out", consumed_by: "announce", error: "ran past its timeout of 1 s" });
    await resultItemsDone([t.id]);
    expect(resultTurns("slow gamma")).toHaveLength(1);
    // The child's run was aborted, not left to answer: its item is done without an answer turn.
    await waitFor(async () => (await db.query("SELECT 1 FROM lane_items WHERE kind = 'subagent_task' AND ref_id = $1 AND status = 'done'", [t.id])).rows[0], 20_000, "the child's run to end");
    expect((await db.query("SELECT count(*)::int AS n FROM turns WHERE session_id = $1 AND role = 'assistant'", [t.child_session_id])).rows[0].n).toBe(0);
    expect((await task(t.id)).status).toBe("timed_out");
  });

  it("/stop in the parent's chat cancels its children; nobody is told of them", async () => {
    const chat = 410000006;
    scripts.set("long delta", (messages) => {
      const last = messages.at(-1)!;
      if (last.role === "user") return { toolCalls: [{ name: "agent_spawn", arguments: { task: "sleep 30000 never", label: "delta" } }] };
      return { content: "Delta started." };
    });
    h.telegram.pushUpdate(privateText(chat, "long delta"));
    await sentTo(h, chat, 1, 20_000);
    await waitFor(async () => h.openai.requests.some((r) => childTask(r) === "sleep 30000 never"), 10_000, "the child's model call");
    h.telegram.pushUpdate(privateText(chat, "/stop"));
    const sent = await sentTo(h, chat, 2, 20_000);
    expect(sent[1]!.params.text).toBe("Stopped 1 sub-agent.");
    const [t] = await tasksOf(chat);
    expect(t).toMatchObject({ status: "cancelled", consumed_by: "stopped", error: "stopped by /stop in its parent's chat" });
    await waitFor(async () => (await db.query("SELECT 1 FROM lane_items WHERE kind = 'subagent_task' AND ref_id = $1 AND status = 'done'", [t.id])).rows[0], 20_000, "the child's run to end");
    expect((await db.query("SELECT count(*)::int AS n FROM lane_items WHERE kind = 'subagent_result' AND ref_id = $1", [t.id])).rows[0].n).toBe(0);
    expect(h.telegram.sent(chat)).toHaveLength(2);
  });

  it("holds both caps: a run's sixth spawn is refused, and never more than the deployment's slots run at once", async () => {
    const chats = [410000011, 410000012, 410000013, 410000014];
    for (const chat of chats) {
      scripts.set(`swarm ${chat}`, (messages) => {
        const last = messages.at(-1)!;
        if (last.role === "user" && lastUserText(messages).includes("swarm")) {
          return { toolCalls: Array.from({ length: 6 }, (_, i) => ({ name: "agent_spawn", arguments: { task: `sleep 300 ${chat}-${i}`, label: `s${i}` } })) };
        }
        if (last.role === "tool") return { content: `spawned: ${toolResults(messages).map((r) => (r.error ? "refused" : r.status)).join(",")}` };
        return { content: "NO_REPLY" };
      });
    }
    let maxRunning = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await db.query("SELECT count(*)::int AS n FROM background_tasks WHERE status = 'running'");
        maxRunning = Math.max(maxRunning, rows[0].n);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    for (const chat of chats) h.telegram.pushUpdate(privateText(chat, `swarm ${chat}`));
    for (const chat of chats) {
      const [reply] = await sentTo(h, chat, 1, 30_000);
      expect(reply!.params.text).toMatch(/^spawned: (running|queued)(,(running|queued)){4},refused$/);
    }
    const ended = await waitFor(async () => {
      const { rows } = await db.query("SELECT status, count(*)::int AS n FROM background_tasks WHERE label LIKE 's%' AND task LIKE 'sleep 300 %' GROUP BY status");
      return rows.length === 1 && rows[0].status === "succeeded" && rows[0].n === 20 ? rows : undefined;
    }, 60_000, "all 20 children to succeed");
    sampling = false;
    await sampler;
    expect(ended[0].n).toBe(20);
    expect(maxRunning).toBeLessThanOrEqual(3);
    expect(maxRunning).toBeGreaterThan(0);
    const refusal = await db.query("SELECT content FROM turns WHERE role = 'tool' AND content LIKE '%AGENT_SUBAGENT_MAX_CHILDREN%'");
    expect(refusal.rows).toHaveLength(4);
    // The metrics say so too: refusals by reason, tasks by status (read at scrape time).
    const metrics = await (await fetch(`${h.nahida.gatewayAddress}/metrics`)).text();
    expect(metrics).toMatch(/^nahida_subagent_spawn_refusals_total\{reason="children_cap"\} 4$/m);
    const succeeded = Number(/^nahida_subagent_tasks_ended_total\{status="succeeded"\} (\d+)$/m.exec(metrics)?.[1]);
    expect(succeeded).toBeGreaterThanOrEqual(20);
    expect(metrics).toMatch(/^nahida_subagent_tasks\{status="running"\} 0$/m);
  });

  it("lets an operator list, read and stop a task over REST; the parent is told of the stop once", async () => {
    const chat = 410000007;
    const api = apiClient(h.nahida.gatewayAddress!, ADMIN);
    scripts.set("long epsilon", (messages) => {
      const last = messages.at(-1)!;
      if (last.role === "user" && lastUserText(messages).includes("long epsilon")) {
        return { toolCalls: [{ name: "agent_spawn", arguments: { task: "sleep 30000 never", label: "epsilon" } }] };
      }
      if (last.role === "tool") return { content: "Epsilon started." };
      return { content: `Heard: ${lastUserText(messages).split("\n")[0]}` };
    });
    h.telegram.pushUpdate(privateText(chat, "long epsilon"));
    await sentTo(h, chat, 1, 20_000);
    const [t] = await tasksOf(chat);

    const list = await api("GET", `/api/sessions/${t.parent_session_id}/tasks`);
    expect(list.status).toBe(200);
    expect(list.body.tasks).toEqual([expect.objectContaining({ task_id: t.id, label: "epsilon", status: "running", adopted: true, consumed_by: null })]);
    expect((await api("GET", `/api/tasks/${t.id}`)).body).toMatchObject({ task_id: t.id, child_session_id: t.child_session_id, timeout_seconds: 900 });
    expect((await api("GET", "/api/tasks/00000000-0000-4000-8000-000000000000")).status).toBe(404);
    expect((await api("GET", "/api/tasks/not-a-uuid")).status).toBe(400);
    expect((await api("GET", "/api/sessions/00000000-0000-4000-8000-000000000000/tasks")).status).toBe(404);
    expect((await apiClient(h.nahida.gatewayAddress!)("POST", `/api/tasks/${t.id}/stop`)).status).toBe(401);

    const stopped = await api("POST", `/api/tasks/${t.id}/stop`);
    expect(stopped.body).toEqual({ task_id: t.id, stopped: true, status: "cancelled" });
    const sent = await sentTo(h, chat, 2, 20_000);
    expect(sent[1]!.params.text).toMatch(/^Heard: \[sub-agent "epsilon" \(task [0-9a-f-]+\) cancelled/);
    expect((await api("POST", `/api/tasks/${t.id}/stop`)).body).toEqual({ task_id: t.id, stopped: false, status: "cancelled" });
    await resultItemsDone([t.id]);
    expect(resultTurns("long epsilon")).toHaveLength(1);
    expect((await task(t.id)).consumed_by).toBe("announce");
  });

  it("a parent run that fails for good does not own the child it started: the child is cancelled and nobody is told", async () => {
    const chat = 410000008;
    scripts.set("doomed zeta", (messages) => {
      const last = messages.at(-1)!;
      if (last.role === "user" && lastUserText(messages).includes("doomed zeta")) {
        return { toolCalls: [{ name: "agent_spawn", arguments: { task: "sleep 30000 orphaned", label: "zeta" } }] };
      }
      // Every attempt's second model call fails: the run's last attempt apologizes, without the spawn's effects.
      return { status: 400, error: "this request always fails" };
    });
    h.telegram.pushUpdate(privateText(chat, "doomed zeta"));
    const [apology] = await sentTo(h, chat, 1, 30_000);
    expect(apology!.params.text).not.toMatch(/zeta/);
    const ended = await waitFor(async () => {
      const [t] = await tasksOf(chat);
      return t?.status === "cancelled" ? t : undefined;
    }, 20_000, "the orphan to be cancelled");
    expect(ended).toMatchObject({ adopted: false, consumed_by: "discarded", error: "the parent run that spawned it did not complete" });
    // One child for all three attempts of its parent run, and no result item for it.
    expect(await tasksOf(chat)).toHaveLength(1);
    expect((await db.query("SELECT count(*)::int AS n FROM lane_items WHERE kind = 'subagent_result' AND ref_id = $1", [ended.id])).rows[0].n).toBe(0);
    await waitFor(async () => (await db.query("SELECT 1 FROM lane_items WHERE kind = 'subagent_task' AND ref_id = $1 AND status = 'done'", [ended.id])).rows[0], 20_000, "the child's run to end");
    expect(h.telegram.sent(chat)).toHaveLength(1);
  });

  it("a yield whose last child is taken inline still resumes the parent with the rest, once", async () => {
    const chat = 410000009;
    const spawnedIds = (messages: Message[]) =>
      messages.flatMap((m) => (m.role === "tool" ? [JSON.parse(textOf(m)) as { task_id?: string }] : [])).flatMap((r) => (r.task_id ? [r.task_id] : []));
    scripts.set("stranded go", (messages) => {
      const last = messages.at(-1)!;
      const user = lastUserText(messages);
      if (last.role === "user" && user.includes("stranded go")) {
        return {
          toolCalls: [
            { name: "agent_spawn", arguments: { task: "echo quick eta", label: "eta-quick" } },
            { name: "agent_spawn", arguments: { task: "sleep 2500 slow eta", label: "eta-slow" } },
          ],
        };
      }
      if (last.role === "tool" && user.includes("stranded go")) return { toolCalls: [{ name: "agent_yield", arguments: {} }] };
      if (last.role === "user" && user.includes("check slow")) return { toolCalls: [{ name: "agent_wait", arguments: { task_ids: [spawnedIds(messages)[1]], timeout_seconds: 20 } }] };
      if (last.role === "tool") return { content: `Waited: ${(toolResults(messages)[0] as { tasks: { result: string }[] }).tasks[0]!.result}` };
      const results = messages.filter((m) => m.role === "user" && /^\[sub-agent /.test(textOf(m))).slice(-2);
      return { content: `Resumed: ${results.map((m) => textOf(m).split("\n")[1]).join(" + ")}` };
    });
    h.telegram.pushUpdate(privateText(chat, "stranded go"));
    // The quick child's result came and waits for the slow one (the parent yielded for both).
    const quick = await waitFor(async () => (await tasksOf(chat)).find((t) => t.label === "eta-quick" && t.status === "succeeded"), 20_000, "the quick child");
    await resultItemsDone([quick.id]);
    expect((await task(quick.id)).consumed_by).toBeNull();
    h.telegram.pushUpdate(privateText(chat, "check slow"));
    const sent = await sentTo(h, chat, 2, 20_000);
    expect(sent.map((m) => m.params.text)).toEqual(["Waited: slow eta", "Resumed: quick eta"]);
    const tasks = await tasksOf(chat);
    expect(tasks.map((t) => [t.label, t.consumed_by])).toEqual([
      ["eta-quick", "resume"],
      ["eta-slow", "wait"],
    ]);
    await waitFor(async () => (await db.query("SELECT 1 FROM lane_items WHERE kind = 'subagent_resume' AND status = 'done'")).rows[0], 10_000, "the resume item");
    await resultItemsDone(tasks.map((t) => t.id));
    expect(h.telegram.sent(chat)).toHaveLength(2);
  });
});
