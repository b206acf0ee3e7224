import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { explainingPool } from "../../../../test/support/explain";
import { createTestDatabase, type TestDatabase } from "../../../../test/support/infra";
import { hotStatements } from "../statements";
import { RunRepository } from "./run.repository";
import { SessionRepository, laneKeyForChat } from "./session.repository";

describe("RunRepository.readChatRun (real Postgres)", () => {
  let t: TestDatabase;
  let runs: RunRepository;
  let sessions: SessionRepository;
  beforeAll(async () => {
    t = await createTestDatabase("run_reads");
    runs = new RunRepository(t.db);
    sessions = new SessionRepository(t.db.prisma);
  });
  afterAll(async () => t?.drop());

  it("on first contact reads no chat, no session and no history; the first session is then current", async () => {
    const address = "telegram:private:1001";
    expect(await runs.readChatRun(address, [], 10)).toEqual({ chat: null, session: null, inbound: [], compaction: null, history: [] });
    const started = await sessions.startChatSession(address, "telegram");
    const read = await runs.readChatRun(address, [], 10);
    expect(read.chat).toMatchObject({ address, channel: "telegram", currentSessionId: started.session.id, triggerMode: "mention" });
    expect(read.chat?.createdAt).toBeInstanceOf(Date);
    expect(read.session).toMatchObject({ id: started.session.id, laneKey: laneKeyForChat(address), status: "active", settings: {} });
    expect(read.history).toEqual([]);
  });

  it("reads the last turns oldest first by their number (across 9 → 10), and the inbound rows in the order asked", async () => {
    const address = "telegram:private:1002";
    const { session } = await sessions.startChatSession(address, "telegram");
    // Turns' seq is one sequence for all sessions: these get numbers around 9 and 10 (and more).
    for (let i = 1; i <= 12; i++) {
      await t.db.prisma.turn.create({ data: { sessionId: session.id, role: i % 2 ? "user" : "assistant", content: `t${i}`, metadata: { n: i } } });
    }
    const inbound = await Promise.all(
      ["a", "b"].map((id) =>
        t.db.prisma.inboundMessage.create({
          data: { channel: "telegram", dedupeKey: id, platformMessageId: id, chatAddress: address, message: { message: { text: id }, context: { chat: address } }, sentAt: new Date() },
        }),
      ),
    );
    const read = await runs.readChatRun(address, [inbound[1]!.id, "00000000-0000-4000-8000-000000000000", inbound[0]!.id], 5);
    expect(read.history.map((turn) => turn.content)).toEqual(["t8", "t9", "t10", "t11", "t12"]);
    const seqs = read.history.map((turn) => turn.seq);
    expect([...seqs].sort((a, b) => (a < b ? -1 : 1))).toEqual(seqs);
    expect(read.history[0]).toMatchObject({ sessionId: session.id, metadata: { n: 8 }, source: "user", inboundMessageId: null });
    expect(read.inbound.map((r) => r.id)).toEqual([inbound[1]!.id, inbound[0]!.id]);
    expect(read.inbound[0]).toMatchObject({ chatAddress: address, message: { text: "b" }, context: { chat: address } });
    expect(read.inbound[0]!.receivedAt).toBeInstanceOf(Date);
  });
  it("reads a long session's history backwards from its newest turn, the limit and no more", async () => {
    const address = "telegram:private:1099";
    const { session } = await sessions.startChatSession(address, "telegram");
    // Turns are kept for good: a session of thousands, among other sessions' turns.
    await t.db.pool.query(
      `INSERT INTO turns (id, session_id, role, content) SELECT gen_random_uuid(), $1::uuid, 'user', 'old ' || g FROM generate_series(1, 3000) g`,
      [session.id],
    );
    await t.db.pool.query("ANALYZE turns");
    const explained = await explainingPool(t.url);
    try {
      const [plan] = await explained.explain(() => new RunRepository({ pool: explained.pool, statements: hotStatements(explained.pool, { prepared: true }) }).readChatRun(address, [], 20));
      expect(plan!.rowsRead, plan!.text).toBeLessThan(60);
    } finally {
      await explained.pool.end();
    }
  });
});
