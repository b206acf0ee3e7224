import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeOpenAIReply, FakeOpenAIRequest } from "../fakes/openai.fake";
import { privateText } from "../e2e/telegram-fixtures";
import { waitFor } from "../support/infra";
import { startDeployment, type Deployment } from "../support/deployment";

// Sub-agents across worker processes and SIGKILLs (docs/subagents.md): two agent workers
// share the lanes; the one running a given lane is killed (a) while a child works, (b) while
// its parent takes the child's result, (c) while the parent runs after spawning and before
// its commit. Every task ends terminal, every result is taken once, and the retried parent
// adopts its child instead of spawning another. Then 20 spawns from 4 parents on both
// processes hold both caps.

const LEASE_MS = 3_000;
const MAX_RUNNING = 3;

type Message = { role: string; content?: string | null };
const messagesOf = (request: FakeOpenAIRequest) => request.body.messages as unknown as Message[];
const textOf = (m: Message | undefined) => (typeof m?.content === "string" ? m.content : "");
const childTask = (request: FakeOpenAIRequest) => {
  const first = messagesOf(request).find((m) => m.role === "user" && textOf(m).startsWith("[sub-agent task"));
  return first ? textOf(first).split("\n")[1] : undefined;
};
const isResultTurn = (m: Message | undefined) => m?.role === "user" && /^\[sub-agent .*\(task /.test(textOf(m));

describe("sub-agents through SIGKILLs on two agent workers", () => {
  let d: Deployment;
  /** Model calls so far, by a key the scripts choose: the first call of some hangs until its worker dies. */
  const calls = new Map<string, number>();
  const count = (key: string) => {
    const n = (calls.get(key) ?? 0) + 1;
    calls.set(key, n);
    return n;
  };
  let inFlightChildren = 0;
  let maxInFlightChildren = 0;

  beforeAll(async () => {
    d = await startDeployment("subagent_kill", ["ingress-telegram", "agent-worker", "agent-worker", "delivery"], {
      NAHIDA_LEASE_MS: String(LEASE_MS),
      AGENT_SUBAGENT_MAX_RUNNING: String(MAX_RUNNING),
    });
    d.openai.onRequest(async (request): Promise<FakeOpenAIReply> => {
      const messages = messagesOf(request);
      const last = messages.at(-1);
      const task = childTask(request);
      if (task !== undefined) {
        const [verb, arg] = task.split(" ");
        // (a): the child's first call hangs; the retried child answers.
        if (verb === "hang-once") return count(`child:${task}`) === 1 ? { content: "never", delayMs: 60_000 } : { content: `${arg} done` };
        inFlightChildren += 1;
        maxInFlightChildren = Math.max(maxInFlightChildren, inFlightChildren);
        await new Promise((r) => setTimeout(r, Number(arg)));
        inFlightChildren -= 1;
        return { content: `slept ${arg}` };
      }
      const opening = textOf(messages.find((m) => m.role === "user")).split("\n").at(-1)!;
      const [scenario] = opening.split(" ");
      if (isResultTurn(last)) {
        // (b): the parent's first turn with the result hangs until its worker dies.
        if (scenario === "b" && count("b:result") === 1) return { content: "never", delayMs: 60_000 };
        return { content: `${scenario}: heard ${textOf(last).split("\n")[1]}` };
      }
      if (scenario === "swarm") {
        if (last?.role === "tool") return { content: "NO_REPLY" };
        return { toolCalls: Array.from({ length: 6 }, (_, i) => ({ name: "agent_spawn", arguments: { task: `sleep 400 ${opening}-${i}` } })) };
      }
      if (last?.role === "user") return { toolCalls: [{ name: "agent_spawn", arguments: { task: scenario === "a" ? "hang-once a" : `sleep 200 ${scenario}`, label: scenario } }] };
      // (c): after the spawn, the parent's next call hangs on its first attempt.
      if (scenario === "c" && count("c:after-spawn") === 1) return { content: "never", delayMs: 60_000 };
      return { content: `${scenario}: spawned` };
    });
  }, 120_000);
  afterAll(async () => d?.close());

  const db = () => d.t.db.pool;
  const laneOf = (chat: number) => `chat:telegram:private:${chat}`;
  const tasksOf = async (chat: number) =>
    (
      await db().query(
        "SELECT t.*, (SELECT count(*)::int FROM turns WHERE role = 'event' AND source = 'subagent:' || t.id::text) AS result_turns FROM background_tasks t JOIN sessions s ON s.id = t.parent_session_id WHERE s.chat_address = $1",
        [`telegram:private:${chat}`],
      )
    ).rows;

  /** SIGKILLs the agent worker running `laneKey`'s current run, and starts another in its place. */
  async function killRunnerOf(laneKey: string): Promise<void> {
    const run = await waitFor(
      async () => (await db().query("SELECT worker_id FROM lane_runs WHERE lane_key = $1 AND status = 'running'", [laneKey])).rows[0],
      20_000,
      `a run on ${laneKey}`,
    );
    const pid = Number(String(run.worker_id).split(":")[1]);
    const victim = d.replicas.find((r) => r.role === "agent-worker" && !r.killed && r.proc.pid === pid);
    if (!victim) throw new Error(`no live agent worker has pid ${pid}`);
    victim.killed = true;
    victim.proc.kill("SIGKILL");
    await victim.proc.exited;
    await d.start("agent-worker");
  }

  /** The chat's answers once `n` arrived, after a positive marker that nothing more is coming. */
  async function answers(chat: number, n: number) {
    await waitFor(async () => d.telegram.sent(chat).length >= n || undefined, 45_000, `${n} answers in chat ${chat}`);
    await waitFor(
      async () => (await db().query("SELECT 1 FROM lane_items WHERE lane_key = $1 AND status IN ('pending', 'running') LIMIT 1", [laneOf(chat)])).rows.length === 0 || undefined,
      20_000,
      "the parent's lane to drain",
    );
    return d.telegram.sent(chat).map((c) => c.params.text as string);
  }

  it("(a) a worker killed while a child works: the child is taken over and its result is taken once", async () => {
    const chat = 450000001;
    d.telegram.pushUpdate(privateText(chat, "a go"));
    await waitFor(async () => (calls.get("child:hang-once a") ?? 0) >= 1 || undefined, 30_000, "the child's first call");
    const [t] = await tasksOf(chat);
    await killRunnerOf(`session:${t.parent_session_id}/sub:${t.id}`);
    expect(await answers(chat, 2)).toEqual(["a: spawned", "a: heard a done"]);
    const [done] = await tasksOf(chat);
    expect(done).toMatchObject({ status: "succeeded", consumed_by: "announce", adopted: true, result_turns: 1 });
    const runs = await db().query("SELECT status FROM lane_runs WHERE lane_key = $1 ORDER BY started_at", [`session:${t.parent_session_id}/sub:${t.id}`]);
    expect(runs.rows.map((r) => r.status)).toEqual(["lost", "succeeded"]);
  }, 90_000);

  it("(b) a worker killed while the parent takes the child's result: the retried turn takes it, once", async () => {
    const chat = 450000002;
    d.telegram.pushUpdate(privateText(chat, "b go"));
    await waitFor(async () => (calls.get("b:result") ?? 0) >= 1 || undefined, 30_000, "the parent's turn with the result");
    const [t] = await tasksOf(chat);
    expect(t.status).toBe("succeeded");
    await killRunnerOf(laneOf(chat));
    expect(await answers(chat, 2)).toEqual(["b: spawned", "b: heard slept 200"]);
    const [done] = await tasksOf(chat);
    expect(done).toMatchObject({ consumed_by: "announce", result_turns: 1 });
  }, 90_000);

  it("(c) a worker killed after the parent spawned and before its commit: the retried run adopts the child, no second spawn", async () => {
    const chat = 450000003;
    d.telegram.pushUpdate(privateText(chat, "c go"));
    await waitFor(async () => (calls.get("c:after-spawn") ?? 0) >= 1 || undefined, 30_000, "the parent's call after the spawn");
    await killRunnerOf(laneOf(chat));
    expect(await answers(chat, 2)).toEqual(["c: spawned", "c: heard slept 200"]);
    const tasks = await tasksOf(chat);
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({ status: "succeeded", adopted: true, consumed_by: "announce", result_turns: 1 });
    // The child ran once, though its parent's turn ran twice: one model call, and one more
    // only if the kill also took the child's own run (its lane run then reads lost) after
    // that run had asked the model (a run lost before asking asks once, in its retry).
    const childLost = await db().query(
      "SELECT count(*)::int AS n FROM lane_runs r JOIN sessions s ON s.lane_key = r.lane_key WHERE s.id = $1 AND r.status = 'lost'",
      [tasks[0].child_session_id],
    );
    const childCalls = d.openai.requests.filter((r) => childTask(r) === "sleep 200 c").length;
    expect(childCalls).toBeGreaterThanOrEqual(1);
    expect(childCalls).toBeLessThanOrEqual(1 + childLost.rows[0].n);
    // The result may be taken by the retried run itself (it came while the lane was held) or by the next.
    const runs = await db().query("SELECT status FROM lane_runs WHERE lane_key = $1 ORDER BY started_at", [laneOf(chat)]);
    expect(runs.rows.map((r) => r.status)).toEqual(["lost", ...runs.rows.slice(1).map(() => "succeeded")]);
  }, 90_000);

  it("holds both caps with 20 spawns from 4 parents on two processes, and every task ends with its result taken once", async () => {
    const chats = [450000011, 450000012, 450000013, 450000014];
    let maxRunning = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await db().query("SELECT count(*)::int AS n FROM background_tasks WHERE status = 'running'");
        maxRunning = Math.max(maxRunning, rows[0].n);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    for (const chat of chats) d.telegram.pushUpdate(privateText(chat, `swarm ${chat}`));
    const all = await waitFor(async () => {
      const { rows } = await db().query("SELECT status, consumed_by FROM background_tasks WHERE task LIKE 'sleep 400 swarm %'");
      return rows.length === 20 && rows.every((r) => r.consumed_by !== null) ? rows : undefined;
    }, 90_000, "20 children ended and reported");
    sampling = false;
    await sampler;
    expect(all.every((r) => r.status === "succeeded" && r.consumed_by === "announce")).toBe(true);
    for (const chat of chats) expect((await tasksOf(chat)).map((t) => t.result_turns)).toEqual([1, 1, 1, 1, 1]);
    expect(maxRunning).toBeLessThanOrEqual(MAX_RUNNING);
    expect(maxInFlightChildren).toBeLessThanOrEqual(MAX_RUNNING);
    expect(maxRunning).toBeGreaterThan(1);
    const refused = await db().query("SELECT count(*)::int AS n FROM turns WHERE role = 'tool' AND content LIKE '%AGENT_SUBAGENT_MAX_CHILDREN%'");
    expect(refused.rows[0].n).toBe(4);
    // No process started more than the slots: both ran children.
    const workers = await db().query("SELECT count(DISTINCT worker_id)::int AS n FROM lane_runs WHERE lane_key LIKE 'session:%' AND status = 'succeeded'");
    expect(workers.rows[0].n).toBeGreaterThan(1);
    expect(d.crashes).toEqual([]);
  }, 120_000);
});
