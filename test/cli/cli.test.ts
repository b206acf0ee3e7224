import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { InboundQuarantineRepository, createDatabase } from "@nahida/db";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/nahida-harness";
import { REPO_ROOT } from "../support/processes";
import { waitFor } from "../support/infra";

const ADMIN = "test-admin-token-cli-0123456789";

/** Runs `npx nahida ...` from the repository root, as an operator would. */
function nahida(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn("npx", ["--no-install", "nahida", ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

// Every call starts a Node process through npx and tsx: about 1.5 s on an idle machine, several
// times that on a loaded one, and a test makes up to a dozen calls.
describe("nahida CLI", { timeout: 240_000 }, () => {
  let h: Harness;
  let env: Record<string, string>;
  beforeAll(async () => {
    h = await startHarness("cli", { NAHIDA_API_TOKEN: ADMIN, SCHEDULER_MIN_INTERVAL_MS: "1000", SCHEDULER_POLL_MS: "100" });
    env = { NAHIDA_API_URL: h.nahida.gatewayAddress!, NAHIDA_API_TOKEN: ADMIN };
    await writeFile(join(h.workspaceDir, "report.pdf"), "%PDF-1.4");
  });
  afterAll(async () => h?.close());

  it("sends text with an attachment, waits for it, and reads the delivery back", async () => {
    const sent = await nahida(["send", "--target", "telegram:private:720000001", "--reply-to", "9", "--attach", "report.pdf", "--wait", "weekly", "report"], env);
    expect(sent.stderr).toBe("");
    expect(sent.code).toBe(0);
    const delivery = JSON.parse(sent.stdout);
    expect(delivery).toMatchObject({ status: "sent", platform_message_ids: ["1", "2"] });
    const [text, doc] = h.telegram.sent(720000001);
    expect(text!.params).toMatchObject({ text: "weekly report", reply_parameters: { message_id: 9 } });
    expect(doc!.method).toBe("sendDocument");

    const got = await nahida(["deliveries", "get", delivery.id], env);
    expect(JSON.parse(got.stdout)).toMatchObject({ id: delivery.id, status: "sent" });
  });

  it("creates, lists and revokes tokens", async () => {
    const created = await nahida(["tokens", "create", "--name", "alerts", "--scopes", "send"], env);
    const token = JSON.parse(created.stdout);
    expect(token.token).toMatch(/^nah_/);
    const list = JSON.parse((await nahida(["tokens", "list"], env)).stdout);
    expect(list.tokens.map((t: { name: string }) => t.name)).toContain("alerts");
    const revoked = JSON.parse((await nahida(["tokens", "revoke", token.id], env)).stdout);
    expect(revoked.revoked_at).toEqual(expect.any(String));
    const refused = await nahida(["send", "--target", "telegram:private:1", "x"], { ...env, NAHIDA_API_TOKEN: token.token });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe("nahida: 401 unauthorized: invalid or revoked token\n");
  });

  it("reports API errors and bad usage with distinct exit codes", async () => {
    const bad = await nahida(["send", "--target", "milky:10001", "hi"], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^nahida: 400 invalid_address: .*expected <channel>:<type>:<id>/);
    const usage = await nahida(["send", "hi"], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("send needs --target");
  });

  it("lists failed deliveries and retries one", async () => {
    const chat = 720000003;
    h.telegram.failNext("sendMessage", { status: 400, description: "Bad Request: chat not found" }, { chatId: chat });
    const sent = await nahida(["send", "--target", `telegram:private:${chat}`, "--wait", "disk", "full"], env);
    expect(sent.code).toBe(1);
    const failed = JSON.parse(sent.stdout);
    expect(failed).toMatchObject({ status: "failed", error: "Bad Request: chat not found" });

    const listed = await nahida(["deliveries", "list", "--status", "failed", "--target", `telegram:private:${chat}`], env);
    expect(listed.stderr).toBe("");
    expect(JSON.parse(listed.stdout)).toMatchObject({ total: 1, deliveries: [{ id: failed.id, status: "failed" }] });
    const retried = await nahida(["deliveries", "retry", failed.id], env);
    expect(JSON.parse(retried.stdout)).toMatchObject({ id: failed.id, status: "queued" });
    await waitFor(async () => {
      const got = JSON.parse((await nahida(["deliveries", "get", failed.id], env)).stdout);
      return got.status === "sent" ? got : undefined;
    }, 20_000, "the retried delivery to be sent");
    expect(h.telegram.sent(chat).map((c) => c.params.text)).toEqual(["disk full", "disk full"]);

    const again = await nahida(["deliveries", "retry", failed.id], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^nahida: 409 conflict: delivery .* is sent; only a failed or expired one can be retried/);
    const bad = await nahida(["deliveries", "list", "--status", "lost"], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^nahida: 400 bad_request: .*status/);
    const usage = await nahida(["deliveries", "retry"], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("deliveries retry needs a delivery id");
    expect((await nahida(["deliveries", "list", "--limit", "many"], env)).stderr).toContain("--limit must be a whole number");
  });

  it("creates, lists, runs, updates and deletes cron jobs", async () => {
    const created = await nahida(["cron", "create", "--name", "nightly", "--target", "telegram:private:720000002", "--cron", "0 3 * * *", "--tz", "Europe/Berlin", "--text", "backup done?"], env);
    expect(created.stderr).toBe("");
    const job = JSON.parse(created.stdout);
    expect(job).toMatchObject({ name: "nightly", tz: "Europe/Berlin", schedule: { kind: "cron", expr: "0 3 * * *" }, payload: { kind: "notify", text: "backup done?" } });
    const listed = JSON.parse((await nahida(["cron", "list", "--target", "telegram:private:720000002"], env)).stdout);
    expect(listed.jobs.map((j: { id: string }) => j.id)).toEqual([job.id]);
    const run = JSON.parse((await nahida(["cron", "run", job.id], env)).stdout);
    expect(run).toMatchObject({ run_id: expect.any(String), status: "claimed" });
    await waitFor(async () => {
      const runs = JSON.parse((await nahida(["cron", "runs", job.id], env)).stdout);
      return runs.runs[0]?.status === "succeeded" ? runs : undefined;
    }, 20_000, "the manual run to succeed");
    expect(h.telegram.sent(720000002).map((c) => c.params.text)).toEqual(["backup done?"]);
    const updated = JSON.parse((await nahida(["cron", "update", job.id, "--every", "2h", "--disabled"], env)).stdout);
    expect(updated).toMatchObject({ schedule: { kind: "every", every_ms: 7_200_000 }, enabled: false, next_run_at: null });
    expect((await nahida(["cron", "delete", job.id], env)).code).toBe(0);
    const gone = await nahida(["cron", "get", job.id], env);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^nahida: 404 not_found: cron job .* does not exist/);
    const bad = await nahida(["cron", "create", "--name", "x", "--target", "telegram:private:1", "--cron", "61 * * * *", "--text", "x"], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/400 bad_request: schedule\.expr: invalid cron expression/);
    const usage = await nahida(["cron", "create", "--name", "x", "--every", "soon", "--text", "x"], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--every must be a duration");
  });

  it("lists, shows and reads sessions, and sends events into one", async () => {
    const db = createDatabase({ url: h.databaseUrl, poolSize: 1 });
    const session = await db.prisma.session.create({ data: { laneKey: "chat:milky:group:4401", chatAddress: "milky:group:4401", channel: "milky" } });
    await db.close();

    const listed = await nahida(["sessions", "list", "--channel", "milky", "--limit", "5"], env);
    expect(listed.stderr).toBe("");
    expect(listed.stdout).toMatch(/^ID +CHANNEL +CHAT +STATUS +LAST ACTIVE\n/);
    expect(listed.stdout).toContain(`${session.id}  milky    milky:group:4401  active`);
    expect(listed.stdout).toContain("1-1 of 1 sessions");
    const json = JSON.parse((await nahida(["sessions", "list", "--channel", "milky", "--json"], env)).stdout);
    expect(json).toMatchObject({ total: 1, sessions: [{ id: session.id, chat_address: "milky:group:4401" }] });
    expect((await nahida(["sessions", "show", session.id], env)).stdout).toContain("chat:        milky:group:4401");

    const recorded = await nahida(["sessions", "send", session.id, "--mode", "record_only", "--wait", "5", "deploy", "at", "18:00"], env);
    expect(recorded.stderr).toBe("");
    expect(recorded.code).toBe(0);
    expect(recorded.stdout).toMatch(new RegExp(`^event [0-9a-f-]{36} in session ${session.id}: recorded\n$`));
    const history = await nahida(["sessions", "history", session.id, "--json"], env);
    expect(JSON.parse(history.stdout).messages).toEqual([expect.objectContaining({ role: "event", content: "deploy at 18:00", source: expect.stringMatching(/^api:/) })]);
    expect((await nahida(["sessions", "history", session.id], env)).stdout).toContain("event (api:");

    // The agent-worker runs here: the event ends answered or failed, and the exit status says which.
    const enqueued = await nahida(["sessions", "send", session.id, "--wait", "20", "--json", "what", "is", "planned?"], env);
    expect(enqueued.stderr).toBe("");
    const final = JSON.parse(enqueued.stdout);
    expect(final).toMatchObject({ session_id: session.id, mode: "enqueue", status: expect.stringMatching(/^(done|failed)$/) });
    expect(enqueued.code).toBe(final.status === "done" ? 0 : 1);
    const followed = await nahida(["sessions", "event", session.id, final.event_id, "--json"], env);
    expect(JSON.parse(followed.stdout)).toMatchObject({ event_id: final.event_id, status: final.status });

    const queued = await nahida(["sessions", "send", session.id, "later"], env);
    expect(queued.stdout).toMatch(new RegExp(`^event [0-9a-f-]{36} queued; follow it with: nahida sessions event ${session.id} [0-9a-f-]{36}\n$`));
    const unknown = await nahida(["sessions", "send", "00000000-0000-4000-8000-000000000000", "hi"], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe("nahida: 404 not_found: session 00000000-0000-4000-8000-000000000000 does not exist\n");
    const usage = await nahida(["sessions", "send", session.id], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("sessions send needs a message");
  });

  it("lists, shows and stops a session's sub-agent tasks", async () => {
    const chat = 720000009;
    h.openai.onRequest((request) => {
      const messages = request.body.messages as { role: string; content?: string }[];
      if (messages.some((m) => m.role === "user" && String(m.content).startsWith("[sub-agent task"))) return { content: "never", delayMs: 30_000 };
      const last = messages.at(-1)!;
      if (last.role === "user" && String(last.content).startsWith("[sub-agent")) return { content: "NO_REPLY" };
      return last.role === "tool" ? { content: "Spawned." } : { toolCalls: [{ name: "agent_spawn", arguments: { task: "count the stars", label: "stars" } }] };
    });
    try {
      h.telegram.pushUpdate({ update_id: 720009, message: { message_id: 1, date: Math.floor(Date.now() / 1000), chat: { id: chat, type: "private", first_name: "Op" }, from: { id: chat, is_bot: false, first_name: "Op" }, text: "start it" } });
      const db = createDatabase({ url: h.databaseUrl, poolSize: 1 });
      const task = await waitFor(async () => (await db.prisma.backgroundTask.findFirst({ where: { label: "stars", status: "running" } })) ?? undefined, 30_000, "the running task");
      await db.close();

      const listed = await nahida(["tasks", "list", task.parentSessionId], env);
      expect(listed.stderr).toBe("");
      expect(listed.stdout).toMatch(new RegExp(`^ID +STATUS +LABEL +TAKEN BY +CREATED\n${task.id}  running  stars  -  `));
      const shown = JSON.parse((await nahida(["tasks", "show", task.id, "--json"], env)).stdout);
      expect(shown).toMatchObject({ task_id: task.id, status: "running", label: "stars", task: "count the stars", parent_session_id: task.parentSessionId });
      // Each call starts a process: the REST test covers a second stop and the errors.
      expect((await nahida(["tasks", "stop", task.id], env)).stdout).toBe(`task ${task.id} stopped\n`);
    } finally {
      h.openai.onRequest(undefined);
    }
  });

  it("lists quarantined events", async () => {
    const db = createDatabase({ url: h.databaseUrl, poolSize: 1 });
    await new InboundQuarantineRepository(db.prisma).record({ channel: "milky", accountId: "10001", reason: "the event nested deeper than 64 levels", raw: { event_type: "message_receive" } });
    await db.close();
    const listed = await nahida(["inbound", "quarantine", "--channel", "milky"], env);
    expect(listed.stderr).toBe("");
    expect(listed.stdout).toMatch(/milky \(account 10001\)[^\n]*\n  reason: the event nested deeper than 64 levels\n  event:  \{"event_type":"message_receive"\}\n1-1 of 1 events\n$/);
  });

  it("lists the plugins, and prints a plugin's config block for its plugin.yaml", async () => {
    const listed = await nahida(["plugins", "list"], env);
    expect(listed.stderr).toBe("");
    expect(listed.stdout).toMatch(/^core 0\.1\.0 \(bundled\)  Core tools and commands\n  provides:    tool current_time, .*\/help.*\n  permissions: workspace read; send \*; cron; sessions; chat; ledger read\n/);
    expect(listed.stdout).toContain("telegram 0.1.0 (bundled)  Telegram\n  provides:    channel telegram (http-client, http-server)\n  permissions: none");
    const schema = await nahida(["plugins", "schema", "examples/plugins/weather"], env);
    expect(schema.stderr).toBe("");
    expect(schema.stdout).toMatch(/^config:\n  type: object\n  properties:\n    forecast_url:\n/);
  });

  it("reads and replaces the send policy from a file", async () => {
    expect(JSON.parse((await nahida(["policy", "get"], env)).stdout)).toEqual({ default: "allow", rules: [] });
    const file = join(h.workspaceDir, "policy.json");
    const policy = { default: "deny", rules: [{ effect: "allow", channel: "telegram" }] };
    await writeFile(file, JSON.stringify(policy));
    const set = await nahida(["policy", "set", file], env);
    expect(set.stderr).toBe("");
    expect(JSON.parse(set.stdout)).toEqual(policy);
    expect(JSON.parse((await nahida(["policy", "get"], env)).stdout)).toEqual(policy);
    await writeFile(file, JSON.stringify({ rules: [{ effect: "sometimes" }] }));
    const bad = await nahida(["policy", "set", file], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^nahida: 400 bad_request: body\.rules\.0\.effect: /);
    await writeFile(file, "{ not json");
    expect((await nahida(["policy", "set", file], env)).code).toBe(2);
  });
});
