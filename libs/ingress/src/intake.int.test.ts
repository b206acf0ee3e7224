import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InboundMessageRepository, InboundQuarantineRepository, createDatabase } from "@nahida/db";
import { cleanEvent, createIntake, type IntakeCandidate } from "./intake";
import { startIntakeHarness, type IntakeHarness } from "./intake-harness";

const TIMESTAMP = "2026-05-10T06:03:00.000Z";

function candidate(dedupeKey: string, text = "hello", chat = "testchat:private:42", extra: Partial<IntakeCandidate["message"]> = {}): IntakeCandidate {
  return {
    channel: "testchat",
    accountId: "bot-1",
    dedupeKey,
    message: {
      messageId: "1",
      channel: "testchat",
      chat,
      sender: { id: "42", displayName: "Alice", label: "Alice", roles: [], isBot: false },
      text,
      attachments: [],
      mentionsBot: chat.includes(":private:"),
      timestamp: TIMESTAMP,
      ...extra,
    },
    context: { timestamp: TIMESTAMP, channel: "testchat", chatType: "private", senderLabel: "Alice", roles: [] },
    raw: { id: dedupeKey },
  };
}

describe("cleanEvent", () => {
  it("removes NUL from nested strings and keys and leaves other values alone", () => {
    expect(cleanEvent({ "a\u0000b": ["c\u0000", 1, null, true, { d: "\u0000e" }] })).toEqual({ ok: true, value: { ab: ["c", 1, null, true, { d: "e" }] } });
    expect(cleanEvent(undefined)).toEqual({ ok: true, value: undefined });
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

  const quarantined = async (id: string) =>
    (await h.t.db.pool.query("SELECT channel, account_id, reason, raw FROM inbound_quarantine WHERE id = $1", [id])).rows[0];

  it("stores an event with lone surrogates and NUL in its keys as well as its values, cleaned (jsonb refuses both)", async () => {
    const c = candidate("lone-surrogate", "bad \ud800");
    const outcome = await h.intake.accept({ ...c, raw: { ["key\udc00"]: { ["k\u0000"]: "v\ud800" } } });
    if (outcome.kind !== "stored") throw new Error(`${outcome.kind}: ${JSON.stringify(outcome)}`);
    const row = await h.t.db.pool.query("SELECT message->'message'->>'text' AS text, raw FROM inbound_messages WHERE id = $1", [outcome.inboundMessageId]);
    expect(row.rows[0]).toEqual({ text: "bad \ufffd", raw: { "key\ufffd": { k: "v\ufffd" } } });
  });

  it("quarantines, and wakes nothing, what Postgres refuses: the acknowledgement still means recorded", async () => {
    const refusing = createIntake({
      inbound: { store: async () => Promise.reject(Object.assign(new Error("invalid input syntax for type json"), { code: "22P02" })) },
      quarantine: new InboundQuarantineRepository(h.t.db.prisma),
      wake: async () => undefined,
      interrupt: async () => undefined,
      supersede: async () => undefined,
    });
    const before = h.wakes.length;
    const outcome = await refusing.accept(candidate("refused"));
    expect(outcome).toMatchObject({ kind: "quarantined", reason: expect.stringContaining("22P02") });
    if (outcome.kind !== "quarantined") return;
    expect(await quarantined(outcome.quarantineId)).toMatchObject({ channel: "testchat", account_id: "bot-1", raw: '{"id":"refused"}' });
    expect(h.wakes.length).toBe(before);
    // The platform delivering it again is recorded once.
    expect(await refusing.accept(candidate("refused"))).toEqual(outcome);
  });

  it("quarantines an event nested 40,000 levels deep instead of overflowing the stack, cut where it nests too deep", async () => {
    const deep = JSON.parse(`${'[{"a":'.repeat(20_000)}1${"}]".repeat(20_000)}`);
    const outcome = await h.intake.accept({ ...candidate("deep"), raw: { date: deep } });
    expect(outcome).toMatchObject({ kind: "quarantined", reason: "the event nested deeper than 64 levels" });
    if (outcome.kind !== "quarantined") return;
    const row = await quarantined(outcome.quarantineId);
    expect(row.raw).toContain("[nested deeper than 64 levels]");
    expect(row.raw.length).toBeLessThan(2_000);
  });

  it("puts a private message in its chat's lane in the statement that stores it, and wakes the lane", async () => {
    const outcome = await h.intake.accept(candidate("lane:1", "hi", "testchat:private:501"));
    if (outcome.kind !== "stored") throw new Error(outcome.kind);
    expect((await h.laneItemsOf(outcome.inboundMessageId)).map((i) => i.lane_key)).toEqual(["chat:testchat:private:501"]);
    expect(h.wakes.at(-1)).toBe("chat:testchat:private:501");
    const chat = await h.t.db.pool.query("SELECT channel, trigger_mode FROM chats WHERE address = 'testchat:private:501'");
    expect(chat.rows).toEqual([{ channel: "testchat", trigger_mode: "mention" }]);
  });

  it("takes an identity seen longer ago than the dedupe window, on another message, as a new event: stored, queued and woken; the old row stays", async () => {
    const first = await h.intake.accept(candidate("reseeded:7", "a week ago", "testchat:private:504"));
    if (first.kind !== "stored") throw new Error(first.kind);
    expect((await h.intake.accept(candidate("reseeded:7", "a week ago", "testchat:private:504"))).kind).toBe("duplicate");
    await h.t.db.pool.query("UPDATE inbound_messages SET received_at = now() - interval '24 hours 1 minute' WHERE id = $1", [first.inboundMessageId]);
    const wakes = h.wakes.length;
    // The same message again, however late, is still a duplicate (a Milky catch-up, a web resend).
    expect((await h.intake.accept(candidate("reseeded:7", "a week ago", "testchat:private:504"))).kind).toBe("duplicate");
    const again = await h.intake.accept(candidate("reseeded:7", "today", "testchat:private:504", { messageId: "2" }));
    if (again.kind !== "stored") throw new Error(again.kind);
    expect(again.inboundMessageId).not.toBe(first.inboundMessageId);
    expect((await h.laneItemsOf(again.inboundMessageId)).map((i) => i.lane_key)).toEqual(["chat:testchat:private:504"]);
    expect(h.wakes.length).toBe(wakes + 1);
    const rows = await h.t.db.pool.query("SELECT id::text, dedupe_key FROM inbound_messages WHERE chat_address = 'testchat:private:504' ORDER BY received_at");
    expect(rows.rows).toEqual([
      { id: first.inboundMessageId, dedupe_key: `bot-1:reseeded:7~${first.inboundMessageId}` },
      { id: again.inboundMessageId, dedupe_key: "bot-1:reseeded:7" },
    ]);
    // The new one is the identity now: its redelivery is a duplicate of it.
    expect(await h.intake.accept(candidate("reseeded:7", "today", "testchat:private:504", { messageId: "2" }))).toEqual({ kind: "duplicate", inboundMessageId: again.inboundMessageId });
  });

  it("stores a re-seeded identity once when two deliveries of the new event race", async () => {
    const first = await h.intake.accept(candidate("reseeded:8", "old", "testchat:private:505"));
    if (first.kind !== "stored") throw new Error(first.kind);
    await h.t.db.pool.query("UPDATE inbound_messages SET received_at = now() - interval '30 hours' WHERE id = $1", [first.inboundMessageId]);
    const outcomes = await Promise.all([0, 1, 2].map(() => h.intake.accept(candidate("reseeded:8", "new", "testchat:private:505", { messageId: "9" }))));
    expect(outcomes.map((o) => o.kind).sort()).toEqual(["duplicate", "duplicate", "stored"]);
    const ids = new Set(outcomes.map((o) => (o as { inboundMessageId: string }).inboundMessageId));
    expect(ids.size).toBe(1);
    expect((await h.t.db.pool.query("SELECT count(*)::int AS n FROM inbound_messages WHERE chat_address = 'testchat:private:505'")).rows[0].n).toBe(2);
  });

  it("numbers a lane's messages in the order they were stored, also when they arrive at once", async () => {
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => h.intake.accept(candidate(`burst:${i}`, `m${i}`, "testchat:private:502"))));
    const seqs = await Promise.all(outcomes.map(async (o) => (o.kind === "stored" ? (await h.laneItemsOf(o.inboundMessageId))[0]!.seq : "none")));
    // One position each, none skipped: the lane row's lock orders them as they commit.
    const numbers = seqs.map(Number).sort((x, y) => x - y);
    expect(numbers).toEqual(Array.from({ length: 20 }, (_, i) => numbers[0]! + i));
  });

  it("keeps an unaddressed group message out of the lane unless the chat's trigger mode is always", async () => {
    const group = "testchat:group:-900";
    const quiet = await h.intake.accept(candidate("group:1", "just chatting", group));
    if (quiet.kind !== "stored") throw new Error(quiet.kind);
    expect(await h.laneItemsOf(quiet.inboundMessageId)).toEqual([]);
    await h.t.db.pool.query("UPDATE chats SET trigger_mode = 'always' WHERE address = $1", [group]);
    const heard = await h.intake.accept(candidate("group:2", "still chatting", group));
    if (heard.kind !== "stored") throw new Error(heard.kind);
    expect(await h.laneItemsOf(heard.inboundMessageId)).toHaveLength(1);
    const mention = await h.intake.accept(candidate("group:3", "@bot hi", "testchat:group:-901", { mentionsBot: true }));
    if (mention.kind !== "stored") throw new Error(mention.kind);
    expect(await h.laneItemsOf(mention.inboundMessageId)).toHaveLength(1);
  });

  it("interrupts the lane for a /stop before waking it, and never queues a command for another bot", async () => {
    const stop = await h.intake.accept(candidate("cmd:1", "/stop", "testchat:private:503"));
    if (stop.kind !== "stored") throw new Error(stop.kind);
    expect(h.interrupts).toEqual(["chat:testchat:private:503"]);
    const other = await h.intake.accept(
      candidate("cmd:2", "/help@otherbot", "testchat:group:-902", { command: { name: "help", args: "", addressedToOther: true } }),
    );
    if (other.kind !== "stored") throw new Error(other.kind);
    expect(await h.laneItemsOf(other.inboundMessageId)).toEqual([]);
    expect(h.interrupts).toHaveLength(1);
  });

  it("supersedes the run in progress by a new message in a lane in interrupt mode, but not by a /stop or in other modes", async () => {
    const lane = "chat:testchat:private:504";
    const first = await h.intake.accept(candidate("int:1", "first", "testchat:private:504"));
    if (first.kind !== "stored") throw new Error(first.kind);
    expect(h.supersedes).toEqual([]);
    await h.t.db.pool.query("UPDATE lanes SET mode = 'interrupt' WHERE key = $1", [lane]);
    const second = await h.intake.accept(candidate("int:2", "second", "testchat:private:504"));
    if (second.kind !== "stored") throw new Error(second.kind);
    const [item] = await h.laneItemsOf(second.inboundMessageId);
    expect(h.supersedes).toEqual([`${item!.seq} ${lane}`]);
    await h.intake.accept(candidate("int:3", "/stop", "testchat:private:504"));
    expect(h.supersedes).toHaveLength(1);
    expect(h.interrupts.at(-1)).toBe(lane);
  });

  it("quarantines a candidate whose parts name another channel", async () => {
    const c = candidate("wrong-channel");
    const outcomes = [
      await h.intake.accept({ ...c, channel: "other" }),
      await h.intake.accept({ ...c, message: { ...c.message, chat: "other:private:42" } }),
      await h.intake.accept({ ...c, context: { ...c.context, channel: "other" } }),
    ];
    for (const outcome of outcomes) expect(outcome).toMatchObject({ kind: "quarantined", reason: expect.stringContaining("channel") });
    const rows = await h.t.db.pool.query("SELECT count(*)::int AS n FROM inbound_messages WHERE dedupe_key LIKE '%wrong-channel'");
    expect(rows.rows[0].n).toBe(0);
  });

  it("quarantines a message that breaks the InboundMessage contract", async () => {
    const c = candidate("bad-message");
    const outcome = await h.intake.accept({ ...c, message: { ...c.message, timestamp: "yesterday" } });
    expect(outcome).toMatchObject({ kind: "quarantined", reason: expect.stringContaining("InboundMessage") });
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
      const unreachable = createIntake({ inbound: new InboundMessageRepository(down), quarantine: new InboundQuarantineRepository(down.prisma), wake: async () => undefined, interrupt: async () => undefined, supersede: async () => undefined });
      await expect(unreachable.accept(candidate("outage"))).rejects.toThrow();
    } finally {
      await down.close();
    }
  });
});
