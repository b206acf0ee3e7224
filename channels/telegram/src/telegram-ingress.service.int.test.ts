import { readFileSync } from "node:fs";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { InboundMessageRepository, InboundQuarantineRepository } from "@nahida/db";
import { createLaneIntake } from "@nahida/ingress";
import { TypedQueue, createRedis } from "@nahida/queue";
import { startFakeTelegram, type FakeTelegram } from "../../../test/fakes/telegram-bot-api.fake";
import { TEST_REDIS_URL, clearQueuePrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from "../../../test/support/infra";
import { startTelegramIngress, type RunningTelegramIngress } from "./telegram-ingress.service";

const SECRET = "instance-secret";
const privateText = JSON.parse(readFileSync(new URL("../../../test/fixtures/telegram/private-text.json", import.meta.url), "utf8"));

describe("two Telegram instances in one deployment", () => {
  let t: TestDatabase;
  let redis: ReturnType<typeof createRedis>;
  let prefix: string;
  let lanesQueue: TypedQueue<"lanes">;
  const fakes: FakeTelegram[] = [];
  const ingresses: RunningTelegramIngress[] = [];
  let main: RunningTelegramIngress;
  let ops: RunningTelegramIngress;
  const errors: string[] = [];
  const logger = pino({ level: "error" }, new Writable({ write: (chunk, _enc, done) => (errors.push(String(chunk)), done()) }));

  async function start(botId: number, channel?: string) {
    const telegram = await startFakeTelegram({ botId, botUsername: `bot_${botId}` });
    fakes.push(telegram);
    const ingress = await startTelegramIngress({
      token: `${botId}:token`,
      apiRoot: telegram.apiRoot,
      mode: "webhook",
      ...(channel !== undefined && { channel }),
      intake: createLaneIntake({ inbound: new InboundMessageRepository(t.db), quarantine: new InboundQuarantineRepository(t.db.prisma), lanes: lanesQueue, redis, prefix }),
      redis,
      prefix,
      logger,
      webhook: { host: "127.0.0.1", port: 0, secret: SECRET },
    });
    ingresses.push(ingress);
    return ingress;
  }

  const post = (ingress: RunningTelegramIngress, path: string, body: unknown) =>
    fetch(`${ingress.webhookAddress}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  const rows = async () =>
    (await t.db.pool.query("SELECT id::text AS id, channel, dedupe_key, chat_address FROM inbound_messages ORDER BY channel")).rows;

  beforeAll(async () => {
    t = await createTestDatabase("telegram_instances");
    redis = createRedis({ url: TEST_REDIS_URL });
    prefix = testQueuePrefix("telegram_instances");
    lanesQueue = new TypedQueue("lanes", { connection: redis, prefix });
    main = await start(7000000001);
    ops = await start(7000000002, "telegram_ops");
  }, 60_000);
  afterAll(async () => {
    for (const ingress of ingresses) await ingress.stop();
    for (const telegram of fakes) await telegram.close();
    await lanesQueue?.close();
    redis?.disconnect();
    if (prefix) await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await t?.drop();
  });

  it("serves each instance's webhook under its own name and keeps the same update_id apart", async () => {
    expect((await post(main, "/telegram/webhook", privateText)).status).toBe(200);
    expect((await post(ops, "/telegram_ops/webhook", privateText)).status).toBe(200);
    expect((await post(ops, "/telegram_ops/webhook", privateText)).status).toBe(200);
    expect((await post(ops, "/telegram/webhook", privateText)).status).toBe(404);

    const stored = await rows();
    expect(stored.map(({ id: _id, ...row }) => row)).toEqual([
      { channel: "telegram", dedupe_key: `7000000001:update:${privateText.update_id}`, chat_address: "telegram:private:123456789" },
      { channel: "telegram_ops", dedupe_key: `7000000002:update:${privateText.update_id}`, chat_address: "telegram_ops:private:123456789" },
    ]);
    // Each in its own instance's chat lane, woken once: the duplicate wakes nothing.
    const wakes = await lanesQueue.queue.getJobs();
    expect(wakes.map((job) => job.data.laneKey).sort()).toEqual(["chat:telegram:private:123456789", "chat:telegram_ops:private:123456789"]);
  });

  it("stores an update with a lone surrogate in a key and a value, made well formed (jsonb refuses the escape)", async () => {
    const before = (await rows()).length;
    const body = JSON.stringify({ ...privateText, update_id: 1, message: { ...privateText.message, text: "x", y: 1 } }).replace('"x"', '"\\ud800"').replace('"y"', '"\\udc00"');
    expect((await post(main, "/telegram/webhook", body)).status).toBe(200);
    expect((await rows()).length).toBe(before + 1);
    expect(errors.filter((line) => line.includes("update cannot be stored"))).toEqual([]);
  });

  it("refuses an instance name that cannot be a ChatAddress channel", async () => {
    await expect(start(7000000003, "Telegram Ops")).rejects.toThrow(/must match/);
  });
});
