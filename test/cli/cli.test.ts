import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/nahida-harness";
import { REPO_ROOT } from "../support/processes";

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

describe("nahida CLI", () => {
  let h: Harness;
  let env: Record<string, string>;
  beforeAll(async () => {
    h = await startHarness("cli", { NAHIDA_API_TOKEN: ADMIN });
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
});
