import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InboundMessageRepository, createDatabase } from "@nahida/db";
import { createIntake, stripNul, type IntakeCandidate } from "./intake";
import { startIntakeHarness, type IntakeHarness } from "./intake-harness";

const TIMESTAMP = "2026-05-10T06:03:00.000Z";

function candidate(dedupeKey: string, text = "hello"): IntakeCandidate {
  return {
    channel: "testchat",
    accountId: "bot-1",
    dedupeKey,
    message: {
      messageId: "1",
      channel: "testchat",
      chat: "testchat:private:42",
      sender: { id: "42", displayName: "Alice", label: "Alice", roles: [], isBot: false },
      text,
      attachments: [],
      mentionsBot: true,
      timestamp: TIMESTAMP,
    },
    context: { timestamp: TIMESTAMP, channel: "testchat", chatType: "private", senderLabel: "Alice", roles: [] },
    raw: { id: dedupeKey },
  };
}

describe("stripNul", () => {
  it("removes NUL from nested strings and keys and leaves other values alone", () => {
    expect(stripNul({ "a\u0000b": ["c\u0000", 1, null, true, { d: "\u0000e" }] })).toEqual({ ab: ["c", 1, null, true, { d: "e" }] });
    expect(stripNul(undefined)).toBeUndefined();
  });
});

describe("createIntake", () => {
  let h: IntakeHarness;
  beforeAll(async () => {
    h = await startIntakeHarness("intake");
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  const jobCount = async () => (await h.queue.queue.getJobs()).length;

  it("answers unstorable, and enqueues nothing, when Postgres refuses the data", async () => {
    const before = await jobCount();
    // A lone surrogate survives JSON.stringify as an escape that jsonb rejects.
    const outcome = await h.intake.accept(candidate("lone-surrogate", "bad \ud800"));
    expect(outcome).toMatchObject({ kind: "unstorable", reason: expect.stringContaining("22P02") });
    expect(await jobCount()).toBe(before);
  });

  it("answers unstorable for a candidate whose parts name another channel", async () => {
    const c = candidate("wrong-channel");
    const outcomes = [
      await h.intake.accept({ ...c, channel: "other" }),
      await h.intake.accept({ ...c, message: { ...c.message, chat: "other:private:42" } }),
      await h.intake.accept({ ...c, context: { ...c.context, channel: "other" } }),
    ];
    for (const outcome of outcomes) expect(outcome).toMatchObject({ kind: "unstorable", reason: expect.stringContaining("channel") });
    const rows = await h.t.db.pool.query("SELECT count(*)::int AS n FROM inbound_messages WHERE dedupe_key LIKE '%wrong-channel'");
    expect(rows.rows[0].n).toBe(0);
  });

  it("answers unstorable for a message that breaks the InboundMessage contract", async () => {
    const c = candidate("bad-message");
    const outcome = await h.intake.accept({ ...c, message: { ...c.message, timestamp: "yesterday" } });
    expect(outcome).toMatchObject({ kind: "unstorable", reason: expect.stringContaining("InboundMessage") });
  });

  it("keys the row by account and dedupe key", async () => {
    const outcome = await h.intake.accept(candidate("update:7"));
    expect(outcome.kind).toBe("stored");
    const rows = await h.t.db.pool.query("SELECT channel, dedupe_key FROM inbound_messages WHERE dedupe_key LIKE '%update:7'");
    expect(rows.rows).toEqual([{ channel: "testchat", dedupe_key: "bot-1:update:7" }]);
  });

  it("treats a key stored within a day before keys carried the account as the same event", async () => {
    const insertLegacy = (key: string, age: string) =>
      h.t.db.pool.query<{ id: string }>(
        `INSERT INTO inbound_messages (id, channel, dedupe_key, platform_message_id, chat_address, message, sent_at, received_at)
         VALUES (gen_random_uuid(), 'testchat', $1, '1', 'testchat:private:42', '{}', now(), now() - $2::interval) RETURNING id::text AS id`,
        [key, age],
      );
    const recent = (await insertLegacy("update:900", "1 hour")).rows[0]!.id;
    await insertLegacy("update:901", "2 days");
    expect(await h.intake.accept(candidate("update:900"))).toEqual({ kind: "duplicate", inboundMessageId: recent });
    // Older than Telegram redelivers: a new event.
    expect((await h.intake.accept(candidate("update:901"))).kind).toBe("stored");
  });

  it("throws when Postgres is unreachable, so the platform is not acknowledged", async () => {
    const down = createDatabase({ url: "postgresql://postgres@127.0.0.1:1/nahida_unreachable", poolSize: 1 });
    try {
      const unreachable = createIntake({ inbound: new InboundMessageRepository(down.prisma), queue: h.queue });
      await expect(unreachable.accept(candidate("outage"))).rejects.toThrow();
    } finally {
      await down.close();
    }
  });
});
