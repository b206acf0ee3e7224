import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../gateway/api-client";
import { pushPrivateText, startDeployment, type Deployment, type Role } from "../support/deployment";
import { waitFor } from "../support/infra";
import { freePort } from "../support/ports";
import { REPO_ROOT } from "../support/processes";

// What the image runs: `npm run build`'s JavaScript, no TypeScript loader, three processes of
// every role on one database and Redis, as a scaled deployment would be.

const ADMIN_TOKEN = "built-deployment-admin-token-0123456789";
const ROLES: Role[] = ["ingress-telegram", "agent-worker", "delivery", "scheduler"];

describe("the built JavaScript, three processes of every role", () => {
  let d: Deployment;
  const gateways: string[] = [];

  beforeAll(async () => {
    await promisify(execFile)(process.execPath, ["--import", "tsx", "scripts/build.ts"], { cwd: REPO_ROOT });
    d = await startDeployment(
      "built",
      ROLES.flatMap((role) => [role, role, role]),
      { NAHIDA_API_TOKEN: ADMIN_TOKEN, SCHEDULER_MIN_INTERVAL_MS: "1000", DATABASE_POOL_SIZE: "2" },
      { built: true },
    );
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      await d.start("gateway", { GATEWAY_PORT: String(port) });
      gateways.push(`http://127.0.0.1:${port}`);
    }
  }, 180_000);
  afterAll(async () => d?.close());

  it("answers a conversation, an /api/send and a cron fire, each once", async () => {
    d.openai.onRequest(() => ({ content: "built and answering" }));
    pushPrivateText(d.telegram, 910001, "hello from a user");

    const [first, second, third] = gateways.map((g) => apiClient(g, ADMIN_TOKEN));
    const sent = await first!("POST", "/api/send", { target: "telegram:private:910002", text: "deploy finished" });
    expect(sent.status).toBe(202);

    const at = new Date(Date.now() + 2_000).toISOString();
    // Kept after its run (an `at` job deletes itself by default, its runs with it), so the run can be read.
    const cron = await second!("POST", "/api/cron", { name: "once", schedule: { kind: "at", at }, delete_after_run: false, target: "telegram:private:910003", payload: { kind: "notify", text: "cron fired" } });
    expect(cron.status).toBe(201);

    const texts = (chat: number) => d.telegram.sent(chat).map((c) => String(c.params.text));
    await waitFor(async () => [910001, 910002, 910003].every((chat) => texts(chat).length > 0) || undefined, 60_000, "all three chats to get their message");
    // The cron run is the positive marker that the one slot was claimed; then nothing more may come.
    const runs = await waitFor(async () => {
      const res = await third!("GET", `/api/cron/${cron.body.id}/runs`);
      return res.body.runs?.length ? res.body.runs : undefined;
    }, 15_000, "the cron run to be recorded");
    expect(runs).toHaveLength(1);
    const delivery = await waitFor(async () => {
      const res = await third!("GET", `/api/deliveries/${sent.body.delivery_id}`);
      return res.body.status === "sent" ? res.body : undefined;
    }, 15_000, "the API send to read sent");
    expect(delivery.attempts).toBe(1);

    expect(texts(910001)).toEqual(["built and answering"]);
    expect(texts(910002)).toEqual(["deploy finished"]);
    expect(texts(910003)).toEqual(["cron fired"]);
    expect(d.crashes).toEqual([]);
  });

  it("drains and exits 0 on SIGTERM", async () => {
    const gateway = d.replicas.find((r) => r.role === "gateway" && !r.killed)!;
    gateway.killed = true;
    gateway.proc.kill("SIGTERM");
    expect(await gateway.proc.exited).toBe(0);
    expect(gateway.proc.output()).toContain('"msg":"stopped"');
  });
});
