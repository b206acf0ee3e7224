import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/nahida-harness";
import { waitFor } from "../support/infra";
import { deliveriesTo, ledgerSettled } from "../support/ledger";
import { apiClient } from "./api-client";

const ADMIN = "test-admin-token-0123456789";

describe("POST /api/send and GET /api/deliveries/:id", () => {
  let h: Harness;
  let admin: ReturnType<typeof apiClient>;
  let base: string;
  beforeAll(async () => {
    h = await startHarness("api_send", { NAHIDA_API_TOKEN: ADMIN });
    base = h.nahida.gatewayAddress!;
    admin = apiClient(base, ADMIN);
    await mkdir(join(h.workspaceDir, "img"));
    await writeFile(join(h.workspaceDir, "img", "chart.png"), Buffer.from("89504e470d0a1a0a", "hex"));
    await writeFile(join(tmpdir(), "nahida-outside.txt"), "secret");
    await symlink(join(tmpdir(), "nahida-outside.txt"), join(h.workspaceDir, "escape.txt")).catch(() => undefined);
  });
  afterAll(async () => h?.close());

  it("sends text with reply_to and a photo, and reports the delivery as sent with message ids", async () => {
    const res = await admin("POST", "/api/send", {
      target: "telegram:private:700000001",
      text: "Deploy **finished**",
      reply_to: 41,
      attachments: [{ type: "photo", path: "img/chart.png", caption: "latency" }],
    });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ delivery_id: expect.any(String), status: "queued" });
    const delivered = await waitFor(async () => {
      const d = await admin("GET", `/api/deliveries/${res.body.delivery_id}`);
      return d.body.status === "sent" ? d.body : undefined;
    }, 15_000, "the delivery to be sent");
    expect(delivered.platform_message_ids).toHaveLength(2);
    expect(delivered.attempts).toBe(1);
    expect(delivered).toMatchObject({ delivery_policy: "at_least_once", uncertain: false, uncertain_parts: [] });
    const [text, photo] = h.telegram.sent(700000001);
    expect(text!.method).toBe("sendMessage");
    expect(text!.params.text).toBe("Deploy <b>finished</b>");
    expect(text!.params.reply_parameters).toMatchObject({ message_id: 41 });
    expect(photo!.method).toBe("sendPhoto");
    expect(photo!.params.caption).toBe("latency");
    expect(photo!.files?.[0]).toMatchObject({ field: "photo" });
  });

  it("rejects targets and attachment paths that must not be sent to", async () => {
    const cases: [unknown, number, RegExp][] = [
      [{ target: "milky:10001", text: "x" }, 400, /expected <channel>:<type>:<id>\[:<thread>\]/],
      [{ target: "telegram:user:1", text: "x" }, 400, /unknown chat type/],
      [{ target: "milky:group:20001", text: "x" }, 404, /channel "milky" is not registered/],
      [{ target: "telegram:private:1", text: "x", attachments: [{ type: "photo", path: "../x" }] }, 400, /'\.\.'/],
      [{ target: "telegram:private:1", text: "x", attachments: [{ type: "photo", path: "/etc/passwd" }] }, 400, /absolute/],
      [{ target: "telegram:private:1", text: "x", attachments: [{ type: "document", path: "escape.txt" }] }, 400, /symlink/],
      [{ target: "telegram:private:1", text: "x", attachments: [{ type: "photo", path: "missing.png" }] }, 400, /no file/],
      // A directory inside the workspace: refused now, not a delivery that fails with EISDIR later.
      [{ target: "telegram:private:1", text: "x", attachments: [{ type: "document", path: "img" }] }, 400, /is a directory/],
      [{ target: "telegram:private:1", text: "x", session_id: "00000000-0000-4000-8000-00000000dead" }, 404, /session/],
      [{ target: "telegram:private:1" }, 400, /text or attachments are required/],
    ];
    for (const [body, status, message] of cases) {
      const res = await admin("POST", "/api/send", body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.error.message, JSON.stringify(body)).toMatch(message);
    }
    const untyped = await admin("POST", "/api/send", { target: "milky:10001", text: "x" });
    expect(untyped.body.error.code).toBe("invalid_address");
  });

  it("keeps an operator's at_most_once policy on the delivery, and refuses an unknown one", async () => {
    const res = await admin("POST", "/api/send", { target: "telegram:private:700000013", text: "page the on-call once", delivery_policy: "at_most_once" });
    expect(res.status).toBe(202);
    const delivered = await waitFor(async () => {
      const d = await admin("GET", `/api/deliveries/${res.body.delivery_id}`);
      return d.body.status === "sent" ? d.body : undefined;
    }, 15_000, "the delivery to be sent");
    expect(delivered).toMatchObject({ delivery_policy: "at_most_once", uncertain: false, uncertain_parts: [] });

    const bad = await admin("POST", "/api/send", { target: "telegram:private:700000013", text: "x", delivery_policy: "exactly_once" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/delivery_policy/);
  });

  it("answers 413 to a 2 MB body", async () => {
    const res = await admin("POST", "/api/send", { target: "telegram:private:1", text: "x".repeat(2 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("payload_too_large");
  });

  it("returns the same delivery for a repeated Idempotency-Key and 409 for a different body", async () => {
    const body = { target: "telegram:private:700000002", text: "once" };
    const first = await admin("POST", "/api/send", body, { "idempotency-key": "deploy-42" });
    const second = await admin("POST", "/api/send", body, { "idempotency-key": "deploy-42" });
    expect(second.status).toBe(202);
    expect(second.body.delivery_id).toBe(first.body.delivery_id);
    const conflict = await admin("POST", "/api/send", { ...body, text: "twice" }, { "idempotency-key": "deploy-42" });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe("conflict");
    await waitFor(async () => h.telegram.sent(700000002).length === 1, 10_000, "one message");
    await ledgerSettled(h.databaseUrl);
    expect(await deliveriesTo(h.databaseUrl, "telegram:private:700000002")).toEqual({ sent: 1 });
    expect(h.telegram.sent(700000002)).toHaveLength(1);
  });

  it("records the sent message in a session's history as an outbound api event", async () => {
    h.openai.enqueue({ content: "hi there" });
    h.telegram.pushUpdate({ message: { message_id: 1, from: { id: 700000003, is_bot: false, first_name: "Eve" }, chat: { id: 700000003, type: "private", first_name: "Eve" }, date: 1778400180, text: "hello" } });
    await waitFor(async () => h.telegram.sent(700000003).length === 1, 10_000, "the chat to have a session");
    const sessions = await admin("GET", "/api/sessions?channel=telegram&limit=100");
    const session = sessions.body.sessions.find((s: { chat_address: string }) => s.chat_address === "telegram:private:700000003");
    const res = await admin("POST", "/api/send", { target: "telegram:private:700000003", text: "maintenance at 22:00", session_id: session.id });
    expect(res.status).toBe(202);
    const history = await admin("GET", `/api/sessions/${session.id}/history`);
    expect(history.body.messages.at(-1)).toMatchObject({ role: "event", source: "api", content: "maintenance at 22:00" });
  });

  it("expires a delivery that is still queued after its TTL", async () => {
    const expiring = await startHarness("api_ttl", { NAHIDA_API_TOKEN: ADMIN, NAHIDA_DELIVERY_TTL_MS: "1", NAHIDA_SERVICES: "gateway" });
    try {
      const call = apiClient(expiring.nahida.gatewayAddress!, ADMIN);
      const res = await call("POST", "/api/send", { target: "telegram:private:1", text: "late" });
      await new Promise((r) => setTimeout(r, 50));
      const status = await call("GET", `/api/deliveries/${res.body.delivery_id}`);
      expect(status.body).toMatchObject({ status: "expired", error: expect.stringContaining("expired") });
    } finally {
      await expiring.close();
    }
  });
});
