import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/infra";
import { groupText, privateText } from "../e2e/telegram-fixtures";
import { sentTo, startHarness, type Harness } from "../support/nahida-harness";

describe("the agent's cron tools and the /cron command", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness("cron_tools", { SCHEDULER_MIN_INTERVAL_MS: "1000", SCHEDULER_POLL_MS: "100" });
  });
  afterAll(async () => h?.close());

  const jobsOf = (target: string) => h.nahida.db.prisma.cronJob.findMany({ where: { target }, orderBy: { createdAt: "asc" } });
  /** The tool results the model was given, by tool call id. */
  const toolResults = () =>
    h.openai.requests.flatMap((r) => r.body.messages.filter((m) => m.role === "tool").map((m) => ({ id: (m as { tool_call_id: string }).tool_call_id, content: String(m.content) })));

  it("cron_create schedules a job for this chat in the run's commit, and it fires", async () => {
    h.openai.enqueue({
      toolCalls: [{ id: "call_create", name: "cron_create", arguments: { name: "water", schedule: { kind: "every", every_ms: 1000 }, payload: { kind: "notify", text: "drink water" } } }],
    });
    h.openai.enqueue({ content: "Scheduled." });
    h.telegram.pushUpdate(privateText(830001, "remind me to drink water every second"));
    await sentTo(h, 830001, 1);
    const [job] = await jobsOf("telegram:private:830001");
    expect(job).toMatchObject({ name: "water", owner: expect.stringMatching(/^session:/), enabled: true });
    const result = JSON.parse(toolResults().find((r) => r.id === "call_create")!.content);
    expect(result).toMatchObject({ id: job!.id, target: "telegram:private:830001", next_run_at: expect.any(String) });
    // It fires: the reminder reaches the chat after the agent's own reply.
    const sends = await sentTo(h, 830001, 3);
    expect(sends.slice(1).map((c) => c.params.text)).toEqual(["drink water", "drink water"]);
  });

  it("cron tools reach only this chat's jobs, and their errors are results the model reads", async () => {
    h.openai.enqueue({
      toolCalls: [
        { id: "call_other", name: "cron_create", arguments: { name: "x", schedule: { kind: "every", every_ms: 60_000 }, payload: { kind: "notify", text: "x" }, target: "telegram:private:830001" } },
        { id: "call_fast", name: "cron_create", arguments: { name: "x", schedule: { kind: "every", every_ms: 10 }, payload: { kind: "notify", text: "x" } } },
        { id: "call_list", name: "cron_list", arguments: {} },
        { id: "call_delete", name: "cron_delete", arguments: { id: (await jobsOf("telegram:private:830001"))[0]!.id } },
      ],
    });
    h.openai.enqueue({ content: "Could not." });
    h.telegram.pushUpdate(privateText(830002, "mess with the other chat"));
    await sentTo(h, 830002, 1);
    const results = new Map(toolResults().map((r) => [r.id, r.content]));
    expect(results.get("call_other")).toMatch(/only be managed for this chat \(telegram:private:830002\)/);
    expect(results.get("call_fast")).toMatch(/at least 1000 ms/);
    expect(JSON.parse(results.get("call_list")!)).toEqual({ jobs: [], total: 0 });
    expect(results.get("call_delete")).toMatch(/no cron job .* for this chat/);
    expect(await jobsOf("telegram:private:830002")).toEqual([]);
    expect(await jobsOf("telegram:private:830001")).toHaveLength(1);
  });

  it("a run that fails after cron_create creates nothing; /cron lists, pauses, resumes and deletes", async () => {
    h.openai.enqueue({ toolCalls: [{ name: "cron_create", arguments: { name: "never", schedule: { kind: "every", every_ms: 60_000 }, payload: { kind: "notify", text: "x" } } }] });
    // Every later attempt of the run fails at the model: the run ends with the apology, and the tool's job is not written.
    h.openai.onRequest(() => ({ status: 500 }));
    h.telegram.pushUpdate(privateText(830003, "schedule something"));
    await sentTo(h, 830003, 1, 30_000);
    h.openai.onRequest(undefined);
    expect(await jobsOf("telegram:private:830003")).toEqual([]);

    const [job] = await jobsOf("telegram:private:830001");
    const short = job!.id.slice(0, 8);
    h.telegram.pushUpdate(privateText(830001, "/cron list"));
    await waitFor(async () => h.telegram.sent(830001).some((c) => String(c.params.text).startsWith("Scheduled jobs:")), 15_000, "the /cron list answer");
    const listing = h.telegram.sent(830001).find((c) => String(c.params.text).startsWith("Scheduled jobs:"))!;
    expect(listing.params.text).toContain(`${short} · water · every 1 s · next`);

    h.telegram.pushUpdate(privateText(830001, `/cron pause ${short}`));
    await waitFor(async () => ((await jobsOf("telegram:private:830001"))[0]!.enabled ? undefined : true), 15_000, "the job to be paused");
    h.telegram.pushUpdate(privateText(830001, `/cron resume ${short}`));
    await waitFor(async () => ((await jobsOf("telegram:private:830001"))[0]!.enabled ? true : undefined), 15_000, "the job to be resumed");
    h.telegram.pushUpdate(privateText(830001, `/cron delete ${short}`));
    await waitFor(async () => ((await jobsOf("telegram:private:830001")).length === 0 ? true : undefined), 15_000, "the job to be deleted");
    // The answers go out after the commits the waits above saw.
    await waitFor(async () => (h.telegram.sent(830001).some((c) => c.params.text === 'Deleted "water".') ? true : undefined), 15_000, "the /cron delete answer");
    const texts = h.telegram.sent(830001).map((c) => String(c.params.text));
    expect(texts).toEqual(expect.arrayContaining(['Paused "water".', 'Resumed "water".', 'Deleted "water".']));
  });

  it("in a group only admins may change jobs with /cron", async () => {
    h.telegram.pushUpdate(groupText(-1008300, "/cron delete abcd1234"));
    await sentTo(h, -1008300, 1);
    expect(h.telegram.sent(-1008300)[0]!.params.text).toBe("Only group admins can do that here.");
  });
});
