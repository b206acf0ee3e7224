import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api } from "grammy";
import type { Update } from "grammy/types";
import pino from "pino";
import type { Redis } from "ioredis";
import type { IntakeOutcome } from "@nahida/ingress";
import { createRedis } from "@nahida/queue";
import { startFakeTelegram, type FakeTelegram } from "../../../test/fakes/telegram-bot-api.fake";
import { TEST_REDIS_URL, clearQueuePrefix, testQueuePrefix, waitFor } from "../../../test/support/infra";
import { RedisLeadership } from "@nahida/queue";
import { TelegramPoller } from "./telegram-poller";

const update = (text: string) => ({
  message: { message_id: 1, from: { id: 5, is_bot: false, first_name: "A" }, chat: { id: 5, type: "private", first_name: "A" }, date: 1778400180, text },
});

describe("TelegramPoller when storing fails", () => {
  let telegram: FakeTelegram;
  let redis: Redis;
  let prefix: string;
  beforeAll(async () => {
    telegram = await startFakeTelegram();
    redis = createRedis({ url: TEST_REDIS_URL });
    prefix = testQueuePrefix("poller_failures");
  });
  afterAll(async () => {
    await telegram?.close();
    redis?.disconnect();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
  });

  function poller(acceptUpdate: (u: Update) => Promise<IntakeOutcome>, key: string) {
    return new TelegramPoller({
      api: new Api("1:x", { apiRoot: telegram.apiRoot }),
      leadership: new RedisLeadership(redis, `${prefix}:lock:${key}`, key, 3_000),
      redis,
      offsetKey: `${prefix}:offset:${key}`,
      acceptUpdate,
      pollTimeoutSeconds: 1,
      logger: pino({ level: "silent" }),
    });
  }

  it("never confirms an update while Postgres is unreachable, and stores it once it is back", async () => {
    const seen: string[] = [];
    let outage = 3;
    const p = poller(async (u) => {
      const text = (u.message as { text: string }).text;
      if (outage-- > 0) throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
      seen.push(text);
      return { kind: "stored", inboundMessageId: text };
    }, "outage");
    telegram.pushUpdate(update("during outage"));
    p.start();
    try {
      await waitFor(async () => seen.includes("during outage"), 20_000, "the update to be stored after the outage");
    } finally {
      await p.stop();
    }
    expect(seen).toEqual(["during outage"]);
  }, 30_000);

  it("skips an update whose data Postgres refuses, and goes on with the next", async () => {
    const seen: string[] = [];
    const p = poller(async (u) => {
      const text = (u.message as { text: string }).text;
      if (text === "poison") return { kind: "quarantined", quarantineId: "q-1", reason: "Postgres refused the data: invalid byte sequence (22021)" };
      seen.push(text);
      return { kind: "stored", inboundMessageId: text };
    }, "poison");
    // The first test's update may still be unconfirmed at the fake; start clean.
    telegram.reset();
    telegram.pushUpdate(update("poison"));
    telegram.pushUpdate(update("after"));
    p.start();
    try {
      await waitFor(async () => seen.includes("after"), 10_000, "the next update");
    } finally {
      await p.stop();
    }
    expect(seen).toEqual(["after"]);
  });
});

describe("TelegramPoller against a getUpdates that ignores the long-poll timeout", () => {
  let telegram: FakeTelegram;
  let redis: Redis;
  let prefix: string;
  beforeAll(async () => {
    telegram = await startFakeTelegram({ ignorePollTimeout: true });
    redis = createRedis({ url: TEST_REDIS_URL });
    prefix = testQueuePrefix("poller_early_empty");
  });
  afterAll(async () => {
    await telegram?.close();
    redis?.disconnect();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
  });

  it("backs off instead of spinning, still takes updates, and stops at once while waiting", async () => {
    const seen: string[] = [];
    const p = new TelegramPoller({
      api: new Api("1:x", { apiRoot: telegram.apiRoot }),
      leadership: new RedisLeadership(redis, `${prefix}:lock`, "early-empty", 3_000),
      redis,
      offsetKey: `${prefix}:offset`,
      acceptUpdate: async (u) => {
        const text = (u.message as { text: string }).text;
        seen.push(text);
        return { kind: "stored", inboundMessageId: text, duplicate: false };
      },
      pollTimeoutSeconds: 25,
      logger: pino({ level: "silent" }),
    });
    p.start();
    try {
      await telegram.waitForCalls("getUpdates", 1);
      await new Promise((r) => setTimeout(r, 2_000));
      // Without a back-off this is in the thousands.
      expect(telegram.callsTo("getUpdates").length).toBeLessThan(20);

      const pushedAt = Date.now();
      telegram.pushUpdate(update("during the back-off"));
      await waitFor(async () => seen.includes("during the back-off"), 6_000, "the update pushed during the back-off", 20);
      expect(Date.now() - pushedAt).toBeLessThan(5_000);

      // The update reset the back-off; after three more empty answers it is a 1 s wait,
      // which a stop must not sit out.
      const calls = telegram.callsTo("getUpdates").length;
      await telegram.waitForCalls("getUpdates", calls + 3, 5_000);
    } finally {
      const stoppingAt = Date.now();
      await p.stop();
      expect(Date.now() - stoppingAt).toBeLessThan(500);
    }
    expect(seen).toEqual(["during the back-off"]);
  }, 20_000);
});
