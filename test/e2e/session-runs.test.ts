import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { z } from "zod";
import type { Redis } from "ioredis";
import { defineTool } from "@nahida/agent-worker";
import { createDatabase, type Database } from "@nahida/db";
import { LaneProducer } from "@nahida/lanes";
import { TypedQueue, createRedis } from "@nahida/queue";
import { TEST_REDIS_URL, waitFor } from "../support/infra";
import { sentTo, startHarness, type Harness } from "../support/nahida-harness";
import { privateText } from "./telegram-fixtures";

/** A deployment's own tool: tells another chat something, through the run's outbox. */
const relayTool = defineTool({
  name: "relay_notice",
  description: "Send a short notice to another chat.",
  parameters: z.object({ target: z.string(), text: z.string() }),
  async execute({ target, text }, context) {
    const sent = await context.outbox.send({ target, message: { text, attachments: [], extra: {} } });
    if (!sent.ok) throw new Error(sent.error.message);
    return { delivery_id: sent.value.deliveryId };
  },
});

describe("session runs: typed lane items and the run's unit of work", () => {
  let h: Harness;
  let db: pg.Pool;
  let database: Database;
  let redis: Redis;
  let lanes: TypedQueue<"lanes">;

  beforeAll(async () => {
    h = await startHarness("session_runs", { LANE_LEASE_MS: "1000" }, { tools: [relayTool] });
    db = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
    database = createDatabase({ url: h.databaseUrl, poolSize: 2 });
    redis = createRedis({ url: TEST_REDIS_URL });
    lanes = new TypedQueue("lanes", { connection: redis, prefix: h.prefix });
  });
  afterAll(async () => {
    await lanes?.close();
    redis?.disconnect();
    await database?.close();
    await db?.end();
    await h?.close();
  });

  it("fails a lane item of an unknown kind with a reason, and the lane goes on", async () => {
    const chat = 300000001;
    const lane = `chat:telegram:private:${chat}`;
    const producer = new LaneProducer(database, lanes);
    await producer.append(lane, "telepathy", "t-1");
    await producer.append(lane, "subagent_result", "00000000-0000-4000-8000-0000000000e1");
    const failed = await waitFor(async () => {
      const { rows } = await db.query("SELECT kind, status, error FROM lane_items WHERE lane_key = $1 ORDER BY seq", [lane]);
      return rows.length === 2 && rows.every((r) => r.status === "failed") ? rows : undefined;
    }, 10_000, "both items to fail");
    expect(failed[0].error).toMatch(/unknown lane item kind "telepathy"; known: inbound, agent_event/);
    expect(failed[1].error).toMatch(/does not handle subagent_result/);

    h.openai.enqueue({ content: "Still here." });
    h.telegram.pushUpdate(privateText(chat, "hello?"));
    const [reply] = await sentTo(h, chat, 1);
    expect(reply!.params.text).toBe("Still here.");
  });

  it("drops what a tool queued when the agent call is stopped: /stop sends nothing the model did", async () => {
    const asker = 300000004;
    const other = 300000005;
    const before = h.openai.requests.length;
    h.openai.enqueue({ toolCalls: [{ name: "relay_notice", arguments: { target: `telegram:private:${other}`, text: "half-done" } }] });
    h.openai.enqueue({ content: "never sent", delayMs: 5_000 });
    h.telegram.pushUpdate(privateText(asker, "tell the other chat something"));
    await h.openai.waitForRequests(before + 2, 10_000);
    h.telegram.pushUpdate(privateText(asker, "/stop"));
    const [stopped] = await sentTo(h, asker, 1, 15_000);
    expect(stopped!.params.text).toBe("Stopped the reply in progress.");
    const rows = await db.query("SELECT count(*)::int AS n FROM deliveries WHERE target = $1", [`telegram:private:${other}`]);
    expect(rows.rows[0].n).toBe(0);
    expect(h.telegram.sent(other)).toHaveLength(0);
  });

  it("sends a tool's message exactly once when the run is taken over mid-run", async () => {
    const asker = 300000002;
    const other = 300000003;
    const lane = `chat:telegram:private:${asker}`;
    const before = h.openai.requests.length;
    const relay = { toolCalls: [{ name: "relay_notice", arguments: { target: `telegram:private:${other}`, text: "deploy done" } }] };
    // First run: the tool runs, then the model stalls; the lane is taken over meanwhile.
    h.openai.enqueue(relay);
    h.openai.enqueue({ content: "Told them (first run).", delayMs: 5_000 });
    // The run that takes over does it all again and commits.
    h.openai.enqueue(relay);
    h.openai.enqueue({ content: "Told them." });
    h.telegram.pushUpdate(privateText(asker, "tell the other chat the deploy is done"));

    await h.openai.waitForRequests(before + 2, 10_000);
    // Another worker took the lease: the token is no longer ours and it has expired.
    await db.query("UPDATE lanes SET lease_token = gen_random_uuid(), lease_expires_at = now() - interval '1 second' WHERE key = $1", [lane]);

    const [answer] = await sentTo(h, asker, 1, 20_000);
    expect(answer!.params.text).toBe("Told them.");
    const [notice] = await sentTo(h, other, 1);
    expect(notice!.params.text).toBe("deploy done");

    const runs = await db.query("SELECT id, status FROM lane_runs WHERE lane_key = $1 ORDER BY started_at", [lane]);
    expect(runs.rows.map((r) => r.status)).toEqual(["lost", "succeeded"]);
    const deliveries = await db.query("SELECT run_id, source, target FROM deliveries WHERE source LIKE 'agent:%'");
    const committedRun = runs.rows[1].id;
    expect(deliveries.rows).toEqual([{ run_id: committedRun, source: `agent:${committedRun}`, target: `telegram:private:${other}` }]);
    expect(h.telegram.sent(other)).toHaveLength(1);
    expect(h.telegram.sent(asker)).toHaveLength(1);
  });
});
