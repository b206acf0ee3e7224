import { describe, expect, it } from "vitest";
import { createApiClient } from "./api.client";
import { sessionsCommand } from "./sessions.command";

const SESSION = "22222222-2222-4222-8222-222222222222";
const EVENT = "33333333-3333-4333-8333-333333333333";
const RUN = "44444444-4444-4444-8444-444444444444";

const event = (status: string, more: Record<string, unknown> = {}) => ({
  event_id: EVENT,
  session_id: SESSION,
  mode: "enqueue",
  status,
  source: "api:t",
  run_id: null,
  reply: null,
  error: null,
  created_at: "2026-12-01T00:00:00.000Z",
  finished_at: null,
  ...more,
});

/** An API that accepts the event, then answers each poll with the next state (the last one repeats). */
function scripted(states: object[]) {
  const polls: number[] = [];
  const api = createApiClient({
    baseUrl: "http://api.invalid",
    fetch: async (_url, init) => {
      if (init?.method === "POST") return Response.json({ event_id: EVENT, status: "queued" }, { status: 202 });
      polls.push(Date.now());
      return Response.json(states[Math.min(polls.length - 1, states.length - 1)]);
    },
  });
  return { api, polls };
}

describe("sessions send --wait", () => {
  it("follows the event to its answer", async () => {
    const { api, polls } = scripted([event("queued"), event("running", { run_id: RUN }), event("done", { run_id: RUN, reply: "all green" })]);
    const result = await sessionsCommand(api, ["send", SESSION, "status?", "--wait", "10"]);
    expect(polls).toHaveLength(3);
    expect(result).toEqual({ exitCode: 0, output: `event ${EVENT} in session ${SESSION}: done (run ${RUN})\nreply: all green` });
  });

  it("reports a run still going at the deadline as still going, with exit status 1", async () => {
    const { api, polls } = scripted([event("running", { run_id: RUN })]);
    const result = await sessionsCommand(api, ["send", SESSION, "status?", "--wait", "1"]);
    expect(polls.length).toBeGreaterThanOrEqual(2);
    expect(result.exitCode).toBe(1);
    expect(result.output).toBe(
      `event ${EVENT} in session ${SESSION}: running (run ${RUN})\nstill running after 1 s; follow it with: nahida sessions event ${SESSION} ${EVENT}`,
    );
  });

  it("prints an answer seen at the last poll as the answer, not as a timeout", async () => {
    const { api } = scripted([event("queued"), event("queued"), event("done", { reply: "just in time" })]);
    // The last poll falls at the deadline; what it saw is the answer.
    const result = await sessionsCommand(api, ["send", SESSION, "x", "--wait", "1", "--json"]);
    expect(result.exitCode).toBe(0);
    expect(result.output).toMatchObject({ status: "done", reply: "just in time" });
  });

  it("ends a failed event with exit status 1 and its error", async () => {
    const { api } = scripted([event("failed", { error: "the run gave up" })]);
    const result = await sessionsCommand(api, ["send", SESSION, "x", "--wait", "5"]);
    expect(result).toEqual({ exitCode: 1, output: `event ${EVENT} in session ${SESSION}: failed\nerror: the run gave up` });
  });

  it("refuses a bad mode or wait before calling the API", async () => {
    const { api, polls } = scripted([]);
    await expect(sessionsCommand(api, ["send", SESSION, "x", "--mode", "later"])).rejects.toThrow("--mode must be record_only or enqueue");
    await expect(sessionsCommand(api, ["send", SESSION, "x", "--wait", "soon"])).rejects.toThrow("--wait must be a whole number");
    await expect(sessionsCommand(api, ["send", SESSION])).rejects.toThrow("sessions send needs a message");
    expect(polls).toHaveLength(0);
  });
});
