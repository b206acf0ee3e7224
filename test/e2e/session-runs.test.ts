import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { z } from "zod";
import type { Redis } from "ioredis";
import { defineEffect, defineLaneKind, EffectStage } from "@nahida/agent-worker";
import { defineTool } from "@nahida/plugin-sdk";
import { ok } from "@nahida/contracts";
import { createDatabase, createRepositories, Prisma, type Database } from "@nahida/db";
import { LaneProducer, LaneStore, wakeLane } from "@nahida/lanes";
import { SessionEvents } from "@nahida/outbox";
import { TypedQueue, createRedis } from "@nahida/queue";
import { apiClient } from "../gateway/api-client";
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

// The run core's extension seams (docs/run.md), from a module the run core does not know:
// a lane item kind of its own, and two effect kinds of their own, one of which has a part
// of the one-statement commit and one of which needs the transaction.

/** Rows the test's effects write; created by the test in its own database. */
const NOTES_DDL = "CREATE TABLE IF NOT EXISTS run_core_notes (ref text PRIMARY KEY, note text NOT NULL, path text NOT NULL)";

/** Writes a note as a part of the one-statement commit; its transaction path must not be taken. */
const notePart = defineEffect<{ ref: string; note: string }>({
  name: "test_note_part",
  stage: EffectStage.records,
  async write() {
    throw new Error("the one-statement commit was not taken for a run whose effects all have parts");
  },
  parts(values) {
    return {
      parts: values.map(
        (v) => (fence: Prisma.Sql) =>
          Prisma.sql`INSERT INTO run_core_notes (ref, note, path) SELECT ${v.ref}, ${v.note}, 'statement' WHERE ${fence}`,
      ),
    };
  },
});

/** Writes a note in the fenced transaction only (no part): a run that emits it commits as a transaction. */
const noteTx = defineEffect<{ ref: string; note: string }>({
  name: "test_note_tx",
  stage: EffectStage.records,
  async write(values, tx) {
    for (const v of values) await tx.$executeRaw`INSERT INTO run_core_notes (ref, note, path) VALUES (${v.ref}, ${v.note}, 'transaction')`;
  },
});

/** A lane item kind whose ref is the note itself: `part:<text>` or `tx:<text>`. */
const noteKind = defineLaneKind<{ path: "part" | "tx"; note: string }>({
  kind: "test_note",
  async load(refIds) {
    return new Map(
      refIds.map((ref) => {
        const [path, note] = ref.split(":", 2) as ["part" | "tx", string];
        return [ref, ok({ path, note })];
      }),
    );
  },
  async handle(items, run) {
    for (const { refId, row } of items) {
      if (row.path === "part") run.uow.emit(notePart, { ref: refId, note: `${row.note} in session ${run.scope.session.id}` });
      else run.uow.emit(noteTx, { ref: refId, note: row.note });
    }
    run.answer({ text: `noted ${items.length}` }, { source: "agent", sessionId: run.sessionId });
  },
});

const ADMIN = "nhd_session_runs_admin_token_0123456789ab";

describe("session runs: typed lane items and the run's unit of work", () => {
  let h: Harness;
  let db: pg.Pool;
  let database: Database;
  let redis: Redis;
  let lanes: TypedQueue<"lanes">;

  beforeAll(async () => {
    h = await startHarness("session_runs", { LANE_LEASE_MS: "1000", NAHIDA_API_TOKEN: ADMIN }, { tools: [relayTool], laneKinds: [noteKind] });
    db = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
    database = createDatabase({ url: h.databaseUrl, poolSize: 2 });
    redis = createRedis({ url: TEST_REDIS_URL });
    lanes = new TypedQueue("lanes", { connection: redis, prefix: h.prefix });
    await db.query(NOTES_DDL);
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
    await producer.append(lane, { kind: "telepathy", refId: "t-1" });
    await producer.append(lane, { kind: "subagent_result", refId: "00000000-0000-4000-8000-0000000000e1" });
    const failed = await waitFor(async () => {
      const { rows } = await db.query("SELECT kind, status, error FROM lane_items WHERE lane_key = $1 ORDER BY seq", [lane]);
      return rows.length === 2 && rows.every((r) => r.status === "failed") ? rows : undefined;
    }, 10_000, "both items to fail");
    expect(failed[0].error).toMatch(/unknown lane item kind "telepathy"; known: inbound, agent_event/);
    expect(failed[1].error).toMatch(/task "00000000-0000-4000-8000-0000000000e1" does not exist/);

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

  it("runs a lane item kind and effect kinds it was given, in one statement when every effect has a part", async () => {
    const chat = 510000001;
    const lane = `chat:telegram:private:${chat}`;
    const producer = new LaneProducer(database, lanes);
    await producer.append(lane, { kind: "test_note", refId: "part:first" });
    const [answer] = await sentTo(h, chat, 1);
    expect(answer!.params.text).toBe("noted 1");
    const first = await db.query("SELECT note, path FROM run_core_notes WHERE ref = 'part:first'");
    expect(first.rows).toEqual([{ note: expect.stringMatching(/^first in session [0-9a-f-]{36}$/), path: "statement" }]);

    // An effect without a part: the same kind commits as a transaction, with the reply.
    await producer.append(lane, { kind: "test_note", refId: "tx:second" });
    const [, second] = await sentTo(h, chat, 2);
    expect(second!.params.text).toBe("noted 1");
    const rows = await db.query("SELECT ref, path FROM run_core_notes ORDER BY ref");
    expect(rows.rows).toEqual([
      { ref: "part:first", path: "statement" },
      { ref: "tx:second", path: "transaction" },
    ]);
    const items = await db.query("SELECT status FROM lane_items WHERE lane_key = $1 AND kind = 'test_note'", [lane]);
    expect(items.rows.map((r) => r.status)).toEqual(["done", "done"]);
  });

  it("a session without a chat runs its lane's event, and its answer lands in its output session, not in any chat", async () => {
    const chat = 510000002;
    h.telegram.pushUpdate(privateText(chat, "hi"));
    await sentTo(h, chat, 1);
    const parent = (await db.query<{ id: string }>("SELECT current_session_id AS id FROM chats WHERE address = $1", [`telegram:private:${chat}`])).rows[0]!.id;
    const child = randomUUID();
    await db.query("INSERT INTO sessions (id, lane_key, parent_id, title) VALUES ($1, $2, $3, 'a sub-agent')", [child, `session:${child}`, parent]);
    const deliveriesBefore = (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM deliveries")).rows[0]!.n;

    h.openai.onRequest((request) => (request.body.user === child ? { content: "The child's findings: 42." } : undefined));
    const api = apiClient(h.nahida.gatewayAddress!, ADMIN);
    const accepted = await api("POST", `/api/sessions/${child}/events`, { message: "Work out the answer.", mode: "enqueue" });
    expect(accepted.status).toBe(202);

    const landed = await waitFor(
      async () =>
        (await db.query("SELECT role, content, source, metadata FROM turns WHERE session_id = $1 AND role = 'event' AND content LIKE 'The child%'", [parent])).rows[0],
      15_000,
      "the child's answer in the parent session",
    );
    const run = (await db.query<{ id: string }>("SELECT id::text AS id FROM lane_runs WHERE lane_key = $1 AND status = 'succeeded'", [`session:${child}`])).rows[0]!;
    expect(landed).toMatchObject({
      role: "event",
      content: "The child's findings: 42.",
      source: `agent:${run.id}`,
      metadata: { kind: "agent_event", mode: "record_only", from_session_id: child },
    });
    const event = await api("GET", `/api/sessions/${child}/events/${accepted.body.event_id}`);
    expect(event.body).toMatchObject({ status: "done", reply: "The child's findings: 42." });
    // The child's own history has the event and the answer; nothing went to any chat.
    const childTurns = await db.query("SELECT role FROM turns WHERE session_id = $1 ORDER BY seq", [child]);
    expect(childTurns.rows.map((r) => r.role)).toEqual(["event", "assistant"]);
    expect((await db.query<{ n: number }>("SELECT count(*)::int AS n FROM deliveries")).rows[0]!.n).toBe(deliveriesBefore);
    expect(h.telegram.sent(chat)).toHaveLength(1);
    expect(h.telegram.callsTo("sendChatAction")).toHaveLength(0);

    // An event the parent itself sent is answered on the event, which the parent reads; its
    // history does not get the answer a second time.
    h.openai.onRequest((request) => (request.body.user === child ? { content: "Asked and answered." } : undefined));
    const repos = createRepositories(database);
    const events = new SessionEvents({
      ...repos,
      appendToLane: (laneKey, item, tx) => new LaneStore(database).append(laneKey, item, tx),
      wake: (laneKey) => wakeLane(lanes, laneKey),
      transaction: (fn) => database.prisma.$transaction(fn),
    });
    const asked = randomUUID();
    const sent = await events.send({ id: asked, sessionId: child, source: `agent:${randomUUID()}`, fromSessionId: parent, content: "And the question?", mode: "enqueue", depth: 1 });
    expect(sent.ok).toBe(true);
    const done = await waitFor(async () => (await db.query("SELECT status, reply FROM session_events WHERE id = $1 AND status <> 'queued'", [asked])).rows[0], 15_000, "the parent's event answered");
    expect(done).toEqual({ status: "done", reply: "Asked and answered." });
    expect((await db.query("SELECT count(*)::int AS n FROM turns WHERE session_id = $1 AND content = 'Asked and answered.'", [parent])).rows[0].n).toBe(0);
  });

  it("refuses a platform message in a chatless session's lane, and a command there never runs", async () => {
    const child = randomUUID();
    await db.query("INSERT INTO sessions (id, lane_key, title) VALUES ($1, $2, 'orphan')", [child, `session:${child}`]);
    const stored = await db.query<{ id: string }>(
      `INSERT INTO inbound_messages (id, channel, dedupe_key, platform_message_id, chat_address, message, sent_at, routed_at)
       VALUES (gen_random_uuid(), 'telegram', 'stray:1', '1', 'telegram:private:7', $1, now(), now()) RETURNING id::text AS id`,
      [
        JSON.stringify({
          message: {
            messageId: "1",
            channel: "telegram",
            chat: "telegram:private:7",
            sender: { id: "7", displayName: "Eve", label: "Eve", roles: [], isBot: false },
            text: "/new",
            attachments: [],
            mentionsBot: false,
            timestamp: "2026-12-01T00:00:00.000Z",
          },
          context: { timestamp: "2026-12-01T00:00:00.000Z", channel: "telegram", chatType: "private", senderLabel: "Eve", roles: [] },
        }),
      ],
    );
    await new LaneProducer(database, lanes).append(`session:${child}`, { kind: "inbound", refId: stored.rows[0]!.id });
    const failed = await waitFor(
      async () => (await db.query("SELECT status, error FROM lane_items WHERE lane_key = $1 AND status <> 'pending' AND status <> 'running'", [`session:${child}`])).rows[0],
      10_000,
      "the stray item to be refused",
    );
    expect(failed).toEqual({ status: "failed", error: `inbound message of chat telegram:private:7 is in the lane of session ${child}` });
    expect((await db.query("SELECT count(*)::int AS n FROM sessions WHERE chat_address = 'telegram:private:7'")).rows[0].n).toBe(0);
  });
});
