import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { formatEnvIssues } from "@nahida/config";
import { readLauncherEnv, startNahida } from "@nahida/launcher";
import { createLogger } from "@nahida/observability";
import { createRedis } from "@nahida/queue";
import { startFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.fake";
import { TEST_BOT_TOKEN, sentTo, startHarness, type Harness } from "../support/nahida-harness";
import { TEST_POSTGRES_URL, TEST_REDIS_URL, clearQueuePrefix, dropDatabase, testQueuePrefix, uniqueName, waitFor } from "../support/infra";
import { freePort } from "../support/ports";
import { apiClient } from "../gateway/api-client";
import { privateText } from "./telegram-fixtures";

const ADMIN = "test-admin-token-0123456789";
const SUPPORT_TOKEN = "7000000002:SUPPORT-token_xyz";
/** One person who writes to both bots: Telegram gives both private chats the same id. */
const USER = 424242;

describe("two Telegram bots in one deployment (instances telegram and support:telegram)", () => {
  let h: Harness;
  let support: FakeTelegram;
  let db: pg.Pool;
  beforeAll(async () => {
    // Only the support bot's token is accepted here, so a send through the wrong bot fails.
    support = await startFakeTelegram({ botUsername: "nahida_support_bot", botId: 7000000002, token: SUPPORT_TOKEN });
    h = await startHarness("e2e_two_bots", {
      NAHIDA_CHANNELS: "telegram,support:telegram",
      SUPPORT_BOT_TOKEN: SUPPORT_TOKEN,
      SUPPORT_API_ROOT: support.apiRoot,
      SUPPORT_POLL_TIMEOUT_SECONDS: "1",
      NAHIDA_API_TOKEN: ADMIN,
    });
    db = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
    // Answers name the channel the envelope shows, so a reply in the wrong chat is visible.
    h.openai.onRequest((request) => {
      const users = request.body.messages.filter((m) => m.role === "user");
      const envelope = /\| ([a-z_-]+)\/private \|/.exec(String(users.at(-1)?.content))?.[1];
      return { content: `answered on ${envelope}` };
    });
  });
  afterAll(async () => {
    await db?.end();
    await h?.close();
    await support?.close();
  });

  it("answers the same update_id on both bots, each through its own bot, in separate sessions", async () => {
    h.telegram.pushUpdate({ update_id: 9001, ...privateText(USER, "hello main bot") });
    support.pushUpdate({ update_id: 9001, ...privateText(USER, "hello support bot") });

    const [main] = await sentTo(h, USER, 1);
    const [fromSupport] = await waitFor(async () => (support.sent(USER).length > 0 ? support.sent(USER) : undefined), 15_000, "the support bot's answer");
    expect(main!.params.text).toBe("answered on telegram");
    expect(fromSupport!.params.text).toBe("answered on support");

    const inbound = await db.query("SELECT channel, dedupe_key FROM inbound_messages ORDER BY channel");
    expect(inbound.rows).toEqual([
      { channel: "support", dedupe_key: "7000000002:update:9001" },
      { channel: "telegram", dedupe_key: "7000000001:update:9001" },
    ]);
    const chats = await db.query("SELECT address FROM chats ORDER BY address");
    expect(chats.rows.map((r) => r.address)).toEqual([`support:private:${USER}`, `telegram:private:${USER}`]);
    // Neither bot sent anything into the other's chats.
    expect(h.telegram.sent(USER)).toHaveLength(1);
    expect(support.sent(USER)).toHaveLength(1);
  });

  it("sends /api/send to support:private:<id> through the second bot, and 404s a channel not configured", async () => {
    const admin = apiClient(h.nahida.gatewayAddress!, ADMIN);
    const before = h.telegram.sent().length;
    const res = await admin("POST", "/api/send", { target: `support:private:${USER}`, text: "From the **support** desk" });
    expect(res.status).toBe(202);
    const delivered = await waitFor(async () => {
      const d = await admin("GET", `/api/deliveries/${res.body.delivery_id}`);
      return d.body.status === "sent" ? d.body : undefined;
    }, 15_000, "the delivery to be sent");
    expect(delivered.platform_message_ids).toHaveLength(1);
    expect(support.sent(USER).at(-1)!.params.text).toBe("From the <b>support</b> desk");
    expect(h.telegram.sent()).toHaveLength(before);

    const unknown = await admin("POST", "/api/send", { target: `sales:private:${USER}`, text: "x" });
    expect(unknown.status).toBe(404);
  });
});

describe("a second bot whose token Telegram rejects", () => {
  it("stops the start with one line naming SUPPORT_BOT_TOKEN", async () => {
    const main = await startFakeTelegram();
    const strict = await startFakeTelegram({ botId: 7000000002, token: SUPPORT_TOKEN });
    const url = new URL(TEST_POSTGRES_URL);
    url.pathname = `/nahida_t_${uniqueName("two_bots_reject")}`;
    const prefix = testQueuePrefix("two_bots_reject");
    try {
      const parsed = await readLauncherEnv({
        DATABASE_URL: url.toString(),
        REDIS_URL: TEST_REDIS_URL,
        NAHIDA_QUEUE_PREFIX: prefix,
        NAHIDA_SERVICES: "ingress-telegram",
        NAHIDA_CHANNELS: "telegram,support:telegram",
        TELEGRAM_BOT_TOKEN: TEST_BOT_TOKEN,
        TELEGRAM_API_ROOT: main.apiRoot,
        TELEGRAM_POLL_TIMEOUT_SECONDS: "1",
        SUPPORT_BOT_TOKEN: "7000000002:wrong-token",
        SUPPORT_API_ROOT: strict.apiRoot,
        GATEWAY_PORT: String(await freePort()),
      });
      if (!parsed.ok) throw new Error(formatEnvIssues(parsed.error));
      await expect(startNahida(parsed.value, createLogger({ level: "silent", service: "test-two-bots-reject" }))).rejects.toMatchObject({
        name: "PreflightError",
        message: expect.stringMatching(/^SUPPORT_BOT_TOKEN: Telegram rejected the bot token \(401 /),
      });
      // Nothing of the first bot's ingress is left running: a poller polls only while it holds
      // its leadership key, and no key is held and no long poll open once the start failed.
      const redis = createRedis({ url: TEST_REDIS_URL });
      try {
        await waitFor(
          async () => (await redis.keys(`${prefix}:telegram:poller:*`)).length === 0 && main.waitingPolls === 0,
          10_000,
          "the poller's leadership given up and its long poll closed",
        );
      } finally {
        redis.disconnect();
      }
    } finally {
      await main.close();
      await strict.close();
      await clearQueuePrefix(TEST_REDIS_URL, prefix);
      await dropDatabase(url.toString());
    }
  });
});
