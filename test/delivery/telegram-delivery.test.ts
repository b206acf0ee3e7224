import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Job } from "bullmq";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OutboundMessage } from "@nahida/contracts";
import { DeliveryRepository, createDatabase, isOutage, type Database, type Delivery } from "@nahida/db";
import { TypedQueue, createRedis } from "@nahida/queue";
import type { FakeTelegramCall } from "../fakes/telegram-bot-api.fake";
import pg from "pg";
import { TEST_POSTGRES_URL, TEST_REDIS_URL, waitFor } from "../support/infra";
import { TEST_BOT_TOKEN, startHarness, type Harness } from "../support/nahida-harness";

/** A 1×1 transparent PNG. */
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "base64");
/** Exponential backoff of `outbound/delivery.send` before its first retry (job catalog). */
const FIRST_BACKOFF_MS = 1_000;
/** Timer slack: BullMQ promotes delayed jobs a little early or late. */
const SLACK_MS = 150;

const FINAL_STATUSES = new Set(["sent", "failed", "expired"]);

let nextChat = 710_000_000;
const newChat = () => ++nextChat;

describe("Telegram delivery (delivery service, Postgres, Redis, fake Telegram)", () => {
  let h: Harness;
  let database: Database;
  let deliveries: DeliveryRepository;
  let redis: Redis;
  let outbound: TypedQueue<"outbound">;
  let outsideDir: string;

  beforeAll(async () => {
    h = await startHarness("delivery_telegram", { NAHIDA_SERVICES: "delivery" });
    database = createDatabase({ url: h.databaseUrl, poolSize: 3 });
    deliveries = new DeliveryRepository(database);
    redis = createRedis({ url: TEST_REDIS_URL });
    outbound = new TypedQueue("outbound", { connection: redis, prefix: h.prefix });
    outsideDir = await mkdtemp(join(tmpdir(), "nahida-outside-"));
  });
  afterAll(async () => {
    await outbound?.close();
    redis?.disconnect();
    await database?.close();
    await h?.close();
    if (outsideDir) await rm(outsideDir, { recursive: true, force: true });
    if (h) await rm(h.workspaceDir, { recursive: true, force: true });
  });

  /** Writes a Delivery row (as a producer would, outbox style) and enqueues its job under the row id. */
  async function enqueue(target: string, message: Partial<OutboundMessage>, options: { expiresAt?: Date } = {}): Promise<string> {
    const row = await deliveries.create({ target, message: OutboundMessage.parse(message), source: "test", ...options });
    await outbound.add("delivery.send", { deliveryId: row.id }, { jobId: row.id });
    return row.id;
  }

  async function row(id: string): Promise<Delivery> {
    const found = await deliveries.get(id);
    if (!found) throw new Error(`delivery ${id} vanished`);
    return found;
  }

  /** The row once it reached sent, failed or expired. */
  function settled(id: string, timeoutMs = 10_000): Promise<Delivery> {
    return waitFor(async () => {
      // The test's own connections die with the service's when a test terminates them: look again.
      const found = await row(id).catch((error: unknown) => {
        if (isOutage(error)) return undefined;
        throw error;
      });
      return found && FINAL_STATUSES.has(found.status) ? found : undefined;
    }, timeoutMs, `delivery ${id} to settle`, 25);
  }

  /** The job once BullMQ finished it for good (completed, or failed with no retry left). */
  function finishedJob(jobId: string, timeoutMs = 10_000): Promise<Job> {
    return waitFor(async () => {
      const state = await (await outbound.queue.getJob(jobId))?.getState();
      // Read again once finished: a job fetched while still active has no return value yet.
      return state === "completed" || state === "failed" ? outbound.queue.getJob(jobId) : undefined;
    }, timeoutMs, `job ${jobId} to finish`, 25);
  }

  const sendsTo = (chat: number | string, method?: string): FakeTelegramCall[] =>
    h.telegram.sent(chat).filter((c) => method === undefined || c.method === method);

  const outcome = (r: Delivery) => ({ status: r.status, attempts: r.attempts, platformMessageIds: r.platformMessageIds, error: r.error });

  it("sends text with reply_to, then a photo uploaded from the workspace", async () => {
    const chat = newChat();
    await mkdir(join(h.workspaceDir, "charts"), { recursive: true });
    await writeFile(join(h.workspaceDir, "charts", "dot.png"), PNG);

    const id = await enqueue(`telegram:private:${chat}`, {
      text: "Here is the **chart** you asked for.",
      replyTo: "321",
      attachments: [{ type: "photo", path: "charts/dot.png", caption: "Daily chart" }],
    });

    expect(outcome(await settled(id))).toEqual({ status: "sent", attempts: 1, platformMessageIds: ["1", "2"], error: null });
    const [text, photo, ...rest] = sendsTo(chat);
    expect(rest).toEqual([]);
    expect(text!.method).toBe("sendMessage");
    expect(text!.params).toMatchObject({
      text: "Here is the <b>chart</b> you asked for.",
      parse_mode: "HTML",
      reply_parameters: { message_id: 321 },
    });
    expect(photo!.method).toBe("sendPhoto");
    expect(photo!.files).toEqual([{ field: "photo", filename: "dot.png", size: PNG.length }]);
    expect(photo!.params.caption).toBe("Daily chart");
    expect(photo!.params.reply_parameters).toBeUndefined();
    expect((await finishedJob(id)).returnvalue).toBe("sent");
  });

  it("passes a document file_id and a photo URL through as strings", async () => {
    const chat = newChat();
    const id = await enqueue(`telegram:private:${chat}`, {
      attachments: [
        { type: "document", fileId: "BQACAgIAAxkBAAIDocumentFileId" },
        { type: "photo", url: "https://files.example.com/photo.jpg", caption: "from the web" },
      ],
    });

    expect(outcome(await settled(id))).toEqual({ status: "sent", attempts: 1, platformMessageIds: ["1", "2"], error: null });
    const [document, photo] = sendsTo(chat);
    expect(document!.method).toBe("sendDocument");
    expect(document!.params.document).toBe("BQACAgIAAxkBAAIDocumentFileId");
    expect(document!.files).toBeUndefined();
    expect(photo!.method).toBe("sendPhoto");
    expect(photo!.params).toMatchObject({ photo: "https://files.example.com/photo.jpg", caption: "from the web" });
    expect(photo!.files).toBeUndefined();
  });

  it("keeps a forum topic on every part", async () => {
    const id = await enqueue("telegram:group:-100123:42", {
      text: "Topic answer",
      replyTo: "9",
      attachments: [{ type: "photo", fileId: "AgACtopicPhoto" }],
    });

    expect(outcome(await settled(id))).toEqual({ status: "sent", attempts: 1, platformMessageIds: ["1", "2"], error: null });
    const parts = sendsTo(-100123);
    expect(parts.map((c) => [c.method, c.params.message_thread_id])).toEqual([
      ["sendMessage", 42],
      ["sendPhoto", 42],
    ]);
    expect(parts[0]!.params.reply_parameters).toMatchObject({ message_id: 9 });
    expect(parts[1]!.params.reply_parameters).toBeUndefined();
  });

  it("retries a 502 with backoff and sends", async () => {
    const chat = newChat();
    h.telegram.failNext("sendMessage", { status: 502 }, { chatId: chat });
    const id = await enqueue(`telegram:private:${chat}`, { text: "after a bad gateway" });

    const waiting = await waitFor(async () => {
      const r = await row(id);
      return r.status === "queued" && r.attempts === 1 ? r : undefined;
    }, 5_000, "the row to wait for its retry", 20);
    expect(waiting.error).toBe("Bad Gateway");

    expect(outcome(await settled(id))).toEqual({ status: "sent", attempts: 2, platformMessageIds: ["1"], error: null });
    const [refused, accepted] = sendsTo(chat, "sendMessage");
    expect(sendsTo(chat)).toHaveLength(2);
    expect(accepted!.params.text).toBe("after a bad gateway");
    expect(accepted!.at.getTime() - refused!.at.getTime()).toBeGreaterThanOrEqual(FIRST_BACKOFF_MS - SLACK_MS);
  });

  it("retries a 5xx that carries retry_after with the normal backoff, not by waiting retry_after", async () => {
    const chat = newChat();
    h.telegram.failNext("sendMessage", { status: 500, retryAfter: 600 }, { chatId: chat });
    const id = await enqueue(`telegram:private:${chat}`, { text: "after a 500 with retry_after" });
    expect(outcome(await settled(id))).toEqual({ status: "sent", attempts: 2, platformMessageIds: ["1"], error: null });
    const [refused, accepted] = sendsTo(chat, "sendMessage");
    expect(accepted!.at.getTime() - refused!.at.getTime()).toBeLessThan(FIRST_BACKOFF_MS * 4);
  });

  it("sends a chat's messages in order, one at a time: a later one waits while an earlier one retries", async () => {
    const chat = newChat();
    h.telegram.failNext("sendMessage", { status: 502 }, { chatId: chat });
    const first = await enqueue(`telegram:private:${chat}`, { text: "first" });
    const second = await enqueue(`telegram:private:${chat}`, { text: "second" });
    await settled(first);
    await settled(second);
    expect(sendsTo(chat, "sendMessage").map((c) => c.params.text)).toEqual(["first", "first", "second"]);
  });

  it("marks the row failed when its last attempt fails transiently", async () => {
    const chat = newChat();
    h.telegram.failNext("sendMessage", { status: 500 }, { chatId: chat });
    const created = await deliveries.create({ target: `telegram:private:${chat}`, message: OutboundMessage.parse({ text: "one try only" }), source: "test" });
    await outbound.add("delivery.send", { deliveryId: created.id }, { jobId: created.id, attempts: 1 });

    expect(outcome(await settled(created.id))).toEqual({ status: "failed", attempts: 1, platformMessageIds: [], error: "Internal Server Error" });
    const job = await finishedJob(created.id);
    expect(await job.getState()).toBe("failed");
    expect(sendsTo(chat)).toHaveLength(1);
  });

  /**
   * A row whose worker died after Telegram accepted (and the row recorded) its text: left
   * `sending` with one part recorded, long enough ago that its claim has gone stale. Then
   * its job runs again.
   */
  async function diedAfterFirstPart(chat: number, message: Partial<OutboundMessage>, options: { pastTtl?: boolean; policy?: "at_most_once" } = {}) {
    const created = await deliveries.create({
      target: `telegram:private:${chat}`,
      message: OutboundMessage.parse(message),
      source: "test",
      ...(options.policy ? { policy: options.policy } : {}),
    });
    const claim = await deliveries.claim(created.id, 10_000);
    if (claim.kind !== "claimed") throw new Error(claim.kind);
    await deliveries.recordPart(created.id, claim.attempt, 0, "555", false);
    await database.pool.query(
      "UPDATE deliveries SET updated_at = now() - interval '2 minutes', expires_at = CASE WHEN $2 THEN now() - interval '1 second' ELSE expires_at END WHERE id = $1",
      [created.id, options.pastTtl ?? false],
    );
    await outbound.add("delivery.send", { deliveryId: created.id }, { jobId: created.id });
    return settled(created.id);
  }

  it("finishes a row interrupted mid-send, even past its TTL, without repeating the part already sent", async () => {
    const chat = newChat();
    const done = await diedAfterFirstPart(
      chat,
      { text: "already out", attachments: [{ type: "photo", fileId: "AgACinterrupted" }] },
      { pastTtl: true },
    );
    expect(outcome(done)).toEqual({ status: "sent", attempts: 2, platformMessageIds: ["555", "1"], error: null });
    // It may have been sending the photo when it died: at_least_once sends it, marked uncertain.
    expect(done.uncertainParts).toEqual([1]);
    expect(sendsTo(chat).map((c) => c.method)).toEqual(["sendPhoto"]);
  });

  it("skips a part of unknown outcome in a taken-over at_most_once row, marking it uncertain, and sends the rest", async () => {
    const chat = newChat();
    const done = await diedAfterFirstPart(
      chat,
      { text: "alert: disk full", attachments: [{ type: "photo", fileId: "AgACdisk" }, { type: "document", fileId: "BQACdisk" }] },
      { policy: "at_most_once" },
    );
    expect(outcome(done)).toEqual({ status: "sent", attempts: 2, platformMessageIds: ["555", "1"], error: null });
    expect(done.uncertainParts).toEqual([1]);
    expect(sendsTo(chat).map((c) => c.method)).toEqual(["sendDocument"]);
  });

  it("marks nothing uncertain in a send that was never taken over", async () => {
    const chat = newChat();
    const id = await enqueue(`telegram:private:${chat}`, { text: "nothing was in flight" });
    const done = await settled(id);
    expect(done.uncertainParts).toEqual([]);
    expect(sendsTo(chat, "sendMessage")).toHaveLength(1);
  });

  it("fails a 400 for good, storing Telegram's description, without retrying", async () => {
    const chat = newChat();
    h.telegram.failNext("sendMessage", { status: 400, description: "Bad Request: chat not found" }, { chatId: chat });
    const id = await enqueue(`telegram:private:${chat}`, { text: "to nowhere" });

    expect(outcome(await settled(id))).toEqual({ status: "failed", attempts: 1, platformMessageIds: [], error: "Bad Request: chat not found" });
    const job = await finishedJob(id);
    expect(await job.getState()).toBe("failed");
    expect(job.attemptsMade).toBe(1);
    expect(job.failedReason).toBe("Bad Request: chat not found");
    expect(sendsTo(chat)).toHaveLength(1);
  });

  it("fails a 400 without a description for good after one attempt, holding up no later message", async () => {
    const chat = newChat();
    h.telegram.failNext("sendMessage", { status: 400, withoutDescription: true }, { chatId: chat });
    const refused = await enqueue(`telegram:private:${chat}`, { text: "refused by a terse proxy" });
    const later = await enqueue(`telegram:private:${chat}`, { text: "goes out next" });

    expect(outcome(await settled(refused))).toEqual({ status: "failed", attempts: 1, platformMessageIds: [], error: "Telegram error 400 (no description)" });
    const job = await finishedJob(refused);
    expect(await job.getState()).toBe("failed");
    expect(job.attemptsMade).toBe(1);
    expect(outcome(await settled(later))).toMatchObject({ status: "sent", attempts: 1 });
    expect(sendsTo(chat, "sendMessage").map((c) => c.params.text)).toEqual(["refused by a terse proxy", "goes out next"]);
  });

  it("resends a chunk Telegram refuses for its entities as plain text", async () => {
    const chat = newChat();
    h.telegram.failNext("sendMessage", { status: 400, description: "Bad Request: can't parse entities: Unsupported start tag \"b\" at byte offset 0" }, { chatId: chat });
    const id = await enqueue(`telegram:private:${chat}`, { text: "**bold** and `code`", replyTo: "15" });

    expect(outcome(await settled(id))).toEqual({ status: "sent", attempts: 1, platformMessageIds: ["1"], error: null });
    const [html, plain, ...rest] = sendsTo(chat, "sendMessage");
    expect(rest).toEqual([]);
    expect(html!.params).toMatchObject({ text: "<b>bold</b> and <code>code</code>", parse_mode: "HTML" });
    expect(plain!.params.text).toBe("**bold** and `code`");
    expect(plain!.params.parse_mode).toBeUndefined();
    expect(plain!.params.reply_parameters).toMatchObject({ message_id: 15 });
  });

  it("retries only the part that failed: the text is never sent twice", async () => {
    const chat = newChat();
    h.telegram.failNext("sendPhoto", { status: 502 }, { chatId: chat });
    const id = await enqueue(`telegram:private:${chat}`, {
      text: "text goes first",
      replyTo: "4",
      attachments: [{ type: "photo", fileId: "AgACsecondPart" }],
    });

    const halfway = await waitFor(async () => {
      const r = await row(id);
      return r.status === "queued" && r.attempts === 1 ? r : undefined;
    }, 5_000, "the row to wait for its retry", 20);
    expect(halfway).toMatchObject({ sentParts: 1, platformMessageIds: ["1"], error: "Bad Gateway" });

    expect(outcome(await settled(id))).toEqual({ status: "sent", attempts: 2, platformMessageIds: ["1", "2"], error: null });
    expect((await row(id)).sentParts).toBe(2);
    expect(sendsTo(chat, "sendMessage")).toHaveLength(1);
    const photos = sendsTo(chat, "sendPhoto");
    expect(photos).toHaveLength(2);
    expect(photos[1]!.params).toMatchObject({ photo: "AgACsecondPart" });
    expect(photos[1]!.params.reply_parameters).toBeUndefined();
  });

  it("retries a dropped connection and sends", async () => {
    const chat = newChat();
    h.telegram.failNext("sendMessage", { network: true }, { chatId: chat });
    const id = await enqueue(`telegram:private:${chat}`, { text: "through a flaky network" });

    const done = await settled(id);
    expect(outcome(done)).toEqual({ status: "sent", attempts: 2, platformMessageIds: ["1"], error: null });
    // No answer came: Telegram may have taken it, so the resend is listed as uncertain.
    expect(done.uncertainParts).toEqual([0]);
    const calls = sendsTo(chat, "sendMessage");
    expect(calls).toHaveLength(2);
    expect(calls[1]!.params.text).toBe("through a flaky network");
  });

  it("does not send a part again after a dropped connection under at_most_once, listing it as uncertain", async () => {
    const chat = newChat();
    h.telegram.failNext("sendMessage", { network: true }, { chatId: chat });
    const created = await deliveries.create({
      target: `telegram:private:${chat}`,
      message: OutboundMessage.parse({ text: "charge the card once", attachments: [{ type: "document", fileId: "BQACreceipt" }] }),
      source: "test",
      policy: "at_most_once",
    });
    await outbound.add("delivery.send", { deliveryId: created.id }, { jobId: created.id });

    const done = await settled(created.id);
    expect(outcome(done)).toEqual({ status: "sent", attempts: 2, platformMessageIds: ["1"], error: null });
    expect(done.uncertainParts).toEqual([0]);
    expect(sendsTo(chat).map((c) => c.method)).toEqual(["sendMessage", "sendDocument"]);
  });

  it("keeps the bot token out of the error stored for a dropped connection", async () => {
    const chat = newChat();
    h.telegram.failNext("sendMessage", { network: true }, { chatId: chat });
    const id = await enqueue(`telegram:private:${chat}`, { text: "network again" });

    const waiting = await waitFor(async () => {
      const r = await row(id);
      return r.status === "queued" && r.attempts === 1 ? r : undefined;
    }, 5_000, "the row to wait for its retry", 20);
    await settled(id);
    expect(waiting.error).toMatch(/network/i);
    expect(waiting.error).not.toContain(TEST_BOT_TOKEN.split(":")[1]);
  });

  it("refuses an attachment path that leaves the workspace", async () => {
    const chat = newChat();
    const id = await enqueue(`telegram:private:${chat}`, { attachments: [{ type: "document", path: "../etc/passwd" }] });

    const r = await settled(id);
    expect(outcome(r)).toMatchObject({ status: "failed", attempts: 1, platformMessageIds: [] });
    expect(r.error).toBe(`path "../etc/passwd" contains '..'`);
    expect(sendsTo(chat)).toEqual([]);
  });

  it("refuses a workspace symlink that points outside", async () => {
    const chat = newChat();
    await writeFile(join(outsideDir, "secret.txt"), "not for the bot");
    await symlink(join(outsideDir, "secret.txt"), join(h.workspaceDir, "innocent.txt"));
    const id = await enqueue(`telegram:private:${chat}`, { attachments: [{ type: "document", path: "innocent.txt" }] });

    const r = await settled(id);
    expect(outcome(r)).toMatchObject({ status: "failed", attempts: 1, platformMessageIds: [] });
    expect(r.error).toBe(`path "innocent.txt" points outside the workspace (symlink)`);
    expect(sendsTo(chat)).toEqual([]);
  });

  it("sends none of a message whose attachment leaves the workspace", async () => {
    const chat = newChat();
    const id = await enqueue(`telegram:private:${chat}`, {
      text: "see the attached file",
      attachments: [{ type: "document", path: "../etc/passwd" }],
    });

    const r = await settled(id);
    expect(r.status).toBe("failed");
    expect(r.error).toContain("'..'");
    expect(sendsTo(chat)).toEqual([]);
    expect(r.platformMessageIds).toEqual([]);
  });

  it("expires a row past its TTL without sending it", async () => {
    const chat = newChat();
    const id = await enqueue(`telegram:private:${chat}`, { text: "too late" }, { expiresAt: new Date(Date.now() - 1_000) });

    expect(outcome(await settled(id))).toEqual({ status: "expired", attempts: 0, platformMessageIds: [], error: "expired before it could be sent" });
    expect((await finishedJob(id)).returnvalue).toBe("expired");
    expect(sendsTo(chat)).toEqual([]);
  });

  it("never sends a part again when recording it fails because Postgres restarted right after the platform accepted it", async () => {
    const chat = newChat();
    const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await admin.connect();
    try {
      // Telegram has the message; before it answers, every connection of the database dies.
      h.telegram.afterAccepting(
        "sendMessage",
        async () => {
          await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [
            new URL(h.databaseUrl).pathname.slice(1),
          ]);
        },
        { chatId: chat },
      );
      const id = await enqueue(`telegram:private:${chat}`, { text: "deploy finished" });
      const row = await settled(id, 20_000);
      expect(row.status).toBe("sent");
      expect(row.platformMessageIds).toEqual(["1"]);
      expect(sendsTo(chat, "sendMessage")).toHaveLength(1);
    } finally {
      await admin.end();
    }
  });

  it("does not send an already sent row again for a duplicate job", async () => {
    const chat = newChat();
    const id = await enqueue(`telegram:private:${chat}`, { text: "only once" });
    await settled(id);
    await finishedJob(id);

    // Same job id: BullMQ keeps the completed job and ignores the add.
    await outbound.add("delivery.send", { deliveryId: id }, { jobId: id });
    // Another job id (a sweep after the completed job was removed): the handler sees the row is done.
    const again = `${id}-again`;
    await outbound.add("delivery.send", { deliveryId: id }, { jobId: again });
    expect((await finishedJob(again)).returnvalue).toBe("already_done");

    expect(outcome(await row(id))).toEqual({ status: "sent", attempts: 1, platformMessageIds: ["1"], error: null });
    expect(sendsTo(chat)).toHaveLength(1);
  });

  it("fails a target on a channel that is not registered, naming it", async () => {
    const before = h.telegram.calls.length;
    const id = await enqueue("milky:group:1", { text: "to a channel this deployment lacks" });

    // The claim that finds out counts as the one attempt; nothing reached any platform.
    expect(outcome(await settled(id))).toEqual({ status: "failed", attempts: 1, platformMessageIds: [], error: 'no channel "milky" is registered' });
    const job = await finishedJob(id);
    expect(await job.getState()).toBe("failed");
    expect(job.attemptsMade).toBe(1);
    expect(h.telegram.calls.slice(before).filter((c) => c.method !== "getMe")).toEqual([]);
  });

  it("holds a rate-limited chat for retry_after while another chat goes out at once", async () => {
    const limited = newChat();
    const other = newChat();
    h.telegram.failNext("sendMessage", { status: 429, retryAfter: 1 }, { chatId: limited });

    const limitedId = await enqueue(`telegram:private:${limited}`, { text: "first to the limited chat" });
    const otherId = await enqueue(`telegram:private:${other}`, { text: "to the other chat" });
    // The row goes back to queued only after the chat's block is stored in Redis.
    const blocked = await waitFor(async () => {
      const r = await row(limitedId);
      return r.status === "queued" && r.attempts === 1 ? r : undefined;
    }, 5_000, "the 429 to be recorded", 10);
    expect(blocked.error).toBe("rate limited: retry after 1 s");
    const [refused] = sendsTo(limited);
    // A later delivery to the same chat waits for the same block instead of hitting Telegram.
    const laterId = await enqueue(`telegram:private:${limited}`, { text: "second to the limited chat" });

    const otherRow = await settled(otherId);
    const [limitedRow, laterRow] = [await settled(limitedId), await settled(laterId)];
    expect(outcome(otherRow)).toEqual({ status: "sent", attempts: 1, platformMessageIds: ["1"], error: null });
    expect(outcome(limitedRow)).toEqual({ status: "sent", attempts: 2, platformMessageIds: [expect.any(String)], error: null });
    expect(outcome(laterRow)).toEqual({ status: "sent", attempts: 1, platformMessageIds: [expect.any(String)], error: null });
    expect([...limitedRow.platformMessageIds, ...laterRow.platformMessageIds].sort()).toEqual(["1", "2"]);

    const [otherSend] = sendsTo(other);
    const limitedSends = sendsTo(limited);
    expect(limitedSends.map((c) => c.params.text).sort()).toEqual(["first to the limited chat", "first to the limited chat", "second to the limited chat"]);
    // The other chat went out right away; the limited chat only after retry_after.
    expect(otherSend!.at.getTime() - refused!.at.getTime()).toBeLessThan(500);
    for (const retried of limitedSends.slice(1)) {
      expect(retried.at.getTime() - refused!.at.getTime()).toBeGreaterThanOrEqual(1_000 - SLACK_MS);
      expect(retried.at.getTime()).toBeGreaterThan(otherSend!.at.getTime());
    }
    // The wait for retry_after does not use up one of the job's attempts.
    expect((await finishedJob(limitedId)).attemptsMade).toBe(1);
  });
});
