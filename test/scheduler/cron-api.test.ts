import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../gateway/api-client";
import { waitFor } from "../support/infra";
import { sentTo, startHarness, type Harness } from "../support/nahida-harness";

const ADMIN = "test-admin-token-cron-0123456789";

describe("cron jobs over REST, fired by the scheduler", () => {
  let h: Harness;
  let admin: ReturnType<typeof apiClient>;
  beforeAll(async () => {
    h = await startHarness("cron_api", { NAHIDA_API_TOKEN: ADMIN, SCHEDULER_MIN_INTERVAL_MS: "1000", SCHEDULER_POLL_MS: "100" });
    admin = apiClient(h.nahida.gatewayAddress!, ADMIN);
  });
  afterAll(async () => h?.close());

  const create = (body: Record<string, unknown>) => admin("POST", "/api/cron", body);
  const runsOf = async (id: string) => (await admin("GET", `/api/cron/${id}/runs?limit=200`)).body.runs as { slot: string; status: string; manual: boolean; delivery_ids: string[]; session_id: string | null; error: string | null }[];
  const succeeded = (id: string, count: number) =>
    waitFor(async () => {
      const runs = (await runsOf(id)).filter((r) => r.status === "succeeded");
      return runs.length >= count ? runs : undefined;
    }, 20_000, `${count} succeeded run(s) of ${id}`);

  it("creates a notify job, fires every slot once, and shows the next and the last run", async () => {
    const res = await create({ name: "tick", schedule: { kind: "every", every_ms: 1000 }, target: "telegram:private:810001", payload: { kind: "notify", text: "**tick**" } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: "tick", enabled: true, missed: "run_once", catchup_window_ms: 600_000, tz: "Asia/Shanghai", owner: expect.stringMatching(/^token:/), last_run: null });
    expect(Date.parse(res.body.next_run_at)).toBeGreaterThan(Date.parse(res.body.created_at));
    const id = res.body.id as string;
    const runs = await succeeded(id, 3);
    const sends = await sentTo(h, 810001, 3);
    expect(sends[0]!.params.text).toBe("<b>tick</b>");
    // One row per slot, one delivery per run, slots a second apart.
    const slots = runs.map((r) => Date.parse(r.slot)).sort();
    expect(new Set(slots).size).toBe(slots.length);
    for (let i = 1; i < slots.length; i++) expect((slots[i]! - slots[i - 1]!) % 1000).toBe(0);
    expect(runs.every((r) => r.delivery_ids.length === 1)).toBe(true);
    const delivery = await admin("GET", `/api/deliveries/${runs[0]!.delivery_ids[0]}`);
    expect(delivery.body).toMatchObject({ status: "sent", source: `cron:${id}` });
    const got = await admin("GET", `/api/cron/${id}`);
    expect(got.body.last_run).toMatchObject({ job_id: id });
    expect(got.body.run_count).toBeGreaterThanOrEqual(3);
    await admin("DELETE", `/api/cron/${id}`);
  });

  it("stores a job whose text holds lone surrogates (cut emoji), made well formed, instead of a 500", async () => {
    const res = await create({ name: "half \ud83d", schedule: { kind: "every", every_ms: 3_600_000 }, target: "telegram:private:810009", payload: { kind: "notify", text: "tick \udc00 tock" } });
    expect(res.status).toBe(201);
    expect(res.body.payload).toMatchObject({ kind: "notify", text: "tick \ufffd tock" });
    await admin("DELETE", `/api/cron/${res.body.id}`);
  });

  it("refuses bad schedules and targets with a 400 naming the problem, and writes nothing", async () => {
    const base = { name: "x", target: "telegram:private:1", payload: { kind: "notify", text: "x" } };
    const cases: [Record<string, unknown>, number, RegExp][] = [
      [{ ...base, schedule: { kind: "cron", expr: "61 * * * *" } }, 400, /schedule\.expr: invalid cron expression/],
      [{ ...base, schedule: { kind: "cron", expr: "* * *" } }, 400, /5 fields/],
      [{ ...base, schedule: { kind: "cron", expr: "0 9 * * *", tz: "Mars/Olympus" } }, 400, /unknown time zone/],
      [{ ...base, schedule: { kind: "at", at: "2020-01-01T00:00:00Z" } }, 400, /in the past/],
      [{ ...base, schedule: { kind: "every", every_ms: 500 } }, 400, /at least 1000 ms/],
      [{ ...base, schedule: { kind: "cron", expr: "* * * * * *" }, target: "telegram:private:1" }, 201, /./],
      [{ ...base, schedule: { kind: "every", every_ms: 60_000 }, target: "12345" }, 400, /expected <channel>:<type>:<id>/],
      [{ ...base, schedule: { kind: "every", every_ms: 60_000 }, target: "milky:10001" }, 400, /expected <channel>:<type>:<id>/],
      [{ ...base, schedule: { kind: "every", every_ms: 60_000 }, target: "milky:group:1" }, 400, /channel "milky" is not registered/],
      [{ ...base, schedule: { kind: "weekly" } }, 400, /schedule/],
      [{ ...base, schedule: { kind: "every", every_ms: 60_000 }, payload: { kind: "agent_turn", prompt: "x", session: "other" } }, 400, /main, isolated or named/],
      [{ ...base, schedule: { kind: "every", every_ms: 60_000 }, payload: { kind: "notify", text: " " } }, 400, /needs text or attachments/],
      [{ ...base, schedule: { kind: "every", every_ms: 60_000 }, jitter_ms: 30_000 }, 400, /jitter_ms: must be less than half the schedule's interval/],
      [{ ...base, schedule: { kind: "every", every_ms: 60_000 }, end_at: "2020-01-01T00:00:00Z" }, 400, /end_at: .* is before the first slot/],
      [{ ...base, schedule: { kind: "at", at: "2400-01-01T00:00:00Z" } }, 400, /at most 100 years ahead/],
    ];
    for (const [body, status, message] of cases) {
      const res = await create(body);
      expect({ body, status: res.status }).toEqual({ body, status });
      if (status === 201) {
        await admin("DELETE", `/api/cron/${res.body.id}`);
        continue;
      }
      expect(res.body.error.message).toMatch(message);
    }
    const list = await admin("GET", "/api/cron?target=telegram:private:1");
    expect(list.body.total).toBe(0);
  });

  it("needs the cron scope to write and read to list", async () => {
    const reader = await admin("POST", "/api/tokens", { name: "reader", scopes: ["read"] });
    const writer = await admin("POST", "/api/tokens", { name: "cron", scopes: ["cron"] });
    const body = { name: "scoped", schedule: { kind: "every", every_ms: 60_000 }, target: "telegram:private:810009", payload: { kind: "notify", text: "x" } };
    expect((await apiClient(h.nahida.gatewayAddress!, reader.body.token)("POST", "/api/cron", body)).status).toBe(403);
    expect((await apiClient(h.nahida.gatewayAddress!)("POST", "/api/cron", body)).status).toBe(401);
    const made = await apiClient(h.nahida.gatewayAddress!, writer.body.token)("POST", "/api/cron", body);
    expect(made.status).toBe(201);
    expect((await apiClient(h.nahida.gatewayAddress!, reader.body.token)("GET", `/api/cron/${made.body.id}`)).status).toBe(200);
    expect((await apiClient(h.nahida.gatewayAddress!, writer.body.token)("GET", `/api/cron/${made.body.id}`)).status).toBe(403);
    await admin("DELETE", `/api/cron/${made.body.id}`);
  });

  it("an edited schedule never fires on its old timing; a disabled or deleted job stops", async () => {
    const edited = (await create({ name: "edit-me", schedule: { kind: "every", every_ms: 1000 }, target: "telegram:private:810002", payload: { kind: "notify", text: "old" } })).body.id as string;
    const paused = (await create({ name: "pause-me", schedule: { kind: "every", every_ms: 1000 }, target: "telegram:private:810003", payload: { kind: "notify", text: "p" } })).body.id as string;
    const deleted = (await create({ name: "delete-me", schedule: { kind: "every", every_ms: 1000 }, target: "telegram:private:810004", payload: { kind: "notify", text: "d" } })).body.id as string;
    await Promise.all([succeeded(edited, 1), succeeded(paused, 1), succeeded(deleted, 1)]);

    const patched = await admin("PATCH", `/api/cron/${edited}`, { schedule: { kind: "every", every_ms: 3_600_000 }, payload: { kind: "notify", text: "new" } });
    expect(patched.status).toBe(200);
    const editedAt = Date.now();
    expect(Date.parse(patched.body.next_run_at)).toBeGreaterThan(editedAt + 3_500_000);
    expect((await admin("PATCH", `/api/cron/${paused}`, { enabled: false })).body).toMatchObject({ enabled: false, next_run_at: null });
    expect((await admin("DELETE", `/api/cron/${deleted}`)).status).toBe(204);
    expect((await admin("GET", `/api/cron/${deleted}`)).status).toBe(404);
    const pausedAt = Date.now();

    // The positive marker: a job created now fires three times; by then the old timings had three chances.
    const marker = (await create({ name: "marker", schedule: { kind: "every", every_ms: 1000 }, target: "telegram:private:810005", payload: { kind: "notify", text: "m" } })).body.id as string;
    await succeeded(marker, 3);
    const editedRuns = await runsOf(edited);
    expect(editedRuns.filter((r) => Date.parse(r.slot) > editedAt)).toEqual([]);
    expect((await runsOf(paused)).filter((r) => Date.parse(r.slot) > pausedAt)).toEqual([]);
    expect(h.telegram.sent(810002).map((c) => c.params.text)).not.toContain("new");

    // Switched back on, it counts from now: the slots it slept through are not owed.
    const resumed = await admin("PATCH", `/api/cron/${paused}`, { enabled: true });
    expect(resumed.body.enabled).toBe(true);
    const before = (await runsOf(paused)).length;
    await waitFor(async () => ((await runsOf(paused)).length > before ? true : undefined), 10_000, "the resumed job to fire");
    const after = (await runsOf(paused)).filter((r) => Date.parse(r.slot) > pausedAt);
    expect(after.every((r) => r.status === "running" || r.status === "succeeded")).toBe(true);
    for (const id of [edited, paused, marker]) await admin("DELETE", `/api/cron/${id}`);
  });

  it("runs a job now on request without moving its schedule", async () => {
    const job = (await create({ name: "manual", schedule: { kind: "cron", expr: "0 9 1 1 *" }, target: "telegram:private:810006", payload: { kind: "notify", text: "by hand" } })).body;
    const res = await admin("POST", `/api/cron/${job.id}/run`);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ run_id: expect.any(String), status: "claimed" });
    const [run] = await succeeded(job.id, 1);
    expect(run).toMatchObject({ manual: true });
    expect((await sentTo(h, 810006, 1))[0]!.params.text).toBe("by hand");
    expect((await admin("GET", `/api/cron/${job.id}`)).body.next_run_at).toBe(job.next_run_at);
    expect((await admin("POST", `/api/cron/00000000-0000-4000-8000-000000000000/run`)).status).toBe(404);
    await admin("DELETE", `/api/cron/${job.id}`);
  });

  it("an agent_turn job's prompt reaches the model as a scheduled event in the chat's session, and its answer reaches the chat", async () => {
    h.openai.onRequest((request) => {
      const last = request.body.messages.at(-1) as { content?: unknown };
      const text = String(last?.content ?? "");
      if (text.includes("nothing to say")) return { content: "HEARTBEAT_OK" };
      return text.includes("[scheduled task") ? { content: "Good morning, here is your digest." } : undefined;
    });
    const job = (
      await create({ name: "digest", schedule: { kind: "every", every_ms: 3_600_000 }, target: "telegram:private:810007", payload: { kind: "agent_turn", prompt: "Write the morning digest." } })
    ).body;
    await admin("POST", `/api/cron/${job.id}/run`);
    const [run] = await succeeded(job.id, 1);
    const [sent] = await sentTo(h, 810007, 1);
    expect(sent!.params.text).toBe("Good morning, here is your digest.");
    const request = h.openai.requests.find((r) => JSON.stringify(r.body.messages).includes("Write the morning digest."))!;
    const prompt = request.body.messages.at(-1) as { role: string; content: string };
    expect(prompt.role).toBe("user");
    expect(prompt.content).toMatch(/^\[scheduled task "digest" \| slot .* \| not a message from a user\]\nWrite the morning digest\.$/);
    expect(run!.delivery_ids).toHaveLength(1);
    const history = await admin("GET", `/api/sessions/${run!.session_id}/history`);
    const event = history.body.messages.find((m: { content: string }) => m.content === "Write the morning digest.");
    expect(event).toMatchObject({ role: "event", source: `cron:${job.id}` });
    expect(history.body.messages.some((m: { role: string }) => m.role === "user")).toBe(false);

    // HEARTBEAT_OK sends nothing; the run still succeeds.
    const quiet = (
      await create({ name: "quiet", schedule: { kind: "every", every_ms: 3_600_000 }, target: "telegram:private:810008", payload: { kind: "agent_turn", prompt: "Say something if there is nothing to say.", session: "isolated" } })
    ).body;
    await admin("POST", `/api/cron/${quiet.id}/run`);
    const [quietRun] = await succeeded(quiet.id, 1);
    expect(quietRun!.delivery_ids).toEqual([]);
    expect(h.telegram.sent(810008)).toEqual([]);
    // An isolated session is its own, not the chat's current one.
    const isolated = await admin("GET", `/api/sessions/${quietRun!.session_id}`);
    expect(isolated.body).toMatchObject({ chat_address: "telegram:private:810008", title: expect.stringMatching(/^cron quiet @/) });
    h.openai.onRequest(undefined);
    for (const id of [job.id, quiet.id]) await admin("DELETE", `/api/cron/${id}`);
  });
});
