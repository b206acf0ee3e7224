// The web chat at scale against Telegram webhooks, same processes, same run:
//   npm run bench:webchat -- [visitors=1000]
// A gateway process (gateway + ingress-telegram in webhook mode) and a worker process
// (agent-worker + delivery) on a fresh database and queue prefix; fake Telegram and OpenAI
// servers here. It prints
//  - the gateway's memory per connected visitor (RSS and V8 heap, from its /metrics, before
//    and after `visitors` sockets said hello and got their history);
//  - the time until every visitor, each sending one message at once, has its answer on its
//    socket; and, as the baseline, the time until `visitors` Telegram webhook messages (one
//    per chat, posted 50 at a time) have their sendMessage at the fake Telegram.
import { randomBytes } from "node:crypto";
import { WebSocket } from "ws";
import type { ServerFrame } from "@nahida/channel-web";
import { startFakeOpenAI } from "../test/fakes/openai.fake";
import { startFakeTelegram } from "../test/fakes/telegram-bot-api.fake";
import { TEST_POSTGRES_URL, TEST_REDIS_URL, clearQueuePrefix, dropDatabase } from "../test/support/infra";
import { freePort } from "../test/support/ports";
import { TEST_WEB_SECRET, visitorToken } from "../test/support/web-chat";
import { createJsonPoster } from "./support/http-load";
import { startServiceProcess } from "./support/service-process";

const [visitors = 1000] = process.argv.slice(2).map(Number);
const BOT_TOKEN = "7000000001:bench-token";
const WEBHOOK_SECRET = "bench-webhook-secret";

const telegram = await startFakeTelegram({ botUsername: "nahida_bench_bot", botId: 7000000001 });
const openai = await startFakeOpenAI();
openai.onRequest(() => ({ content: "ok" }));
const tag = randomBytes(4).toString("hex");
const databaseUrl = new URL(TEST_POSTGRES_URL);
databaseUrl.pathname = `/nahida_bench_webchat_${tag}`;
const prefix = `nahida_bench_webchat_${tag}`;
const [gatewayPort, webhookPort] = [await freePort(), await freePort()];
const common = {
  DATABASE_URL: databaseUrl.toString(),
  REDIS_URL: TEST_REDIS_URL,
  NAHIDA_QUEUE_PREFIX: prefix,
  TELEGRAM_BOT_TOKEN: BOT_TOKEN,
  TELEGRAM_API_ROOT: telegram.apiRoot,
  TELEGRAM_MODE: "webhook",
  TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
  TELEGRAM_WEBHOOK_PORT: String(webhookPort),
  WEB_SECRET: TEST_WEB_SECRET,
  WEB_RATE_PER_MINUTE: "1000",
  OPENAI_BASE_URL: openai.baseURL,
  OPENAI_API_KEY: "bench",
  GATEWAY_PORT: String(gatewayPort),
  LOG_LEVEL: "info",
};
const gateway = await startServiceProcess("services/launcher/src/main.ts", { ...common, NAHIDA_SERVICES: "gateway,ingress-telegram" }, { readyText: "nahida started", timeoutMs: 60_000 });
const workers = await startServiceProcess("services/launcher/src/main.ts", { ...common, NAHIDA_SERVICES: "agent-worker,delivery", AGENT_CONCURRENCY: "64", DELIVERY_CONCURRENCY: "64" }, { readyText: "nahida started", timeoutMs: 60_000 });
const base = `http://127.0.0.1:${gatewayPort}`;

async function gatewayMemory(): Promise<{ rss: number; heap: number }> {
  await new Promise((r) => setTimeout(r, 2_000));
  const text = await (await fetch(`${base}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)`, "m").exec(text)?.[1] ?? NaN);
  return { rss: value("process_resident_memory_bytes"), heap: value("nodejs_heap_size_used_bytes") };
}

async function until(check: () => boolean, what: string, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Baseline: one Telegram webhook message per chat, 50 requests in flight.
async function telegramRound(count: number, firstChat: number): Promise<number> {
  const poster = createJsonPoster(50);
  const url = new URL(`http://127.0.0.1:${webhookPort}/telegram/webhook`);
  const before = telegram.callsTo("sendMessage").length;
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      while (next < count) {
        const i = next++;
        const chat = firstChat + i;
        const status = await poster.post(
          url,
          { update_id: chat, message: { message_id: 1, from: { id: chat, is_bot: false, first_name: "B" }, chat: { id: chat, type: "private", first_name: "B" }, date: 1778400180, text: "hello" } },
          { "x-telegram-bot-api-secret-token": WEBHOOK_SECRET },
        );
        if (status !== 200) throw new Error(`webhook answered ${status}`);
      }
    }),
  );
  await until(() => telegram.callsTo("sendMessage").length >= before + count, `${count} Telegram answers`);
  poster.close();
  return performance.now() - started;
}

interface Visitor {
  ws: WebSocket;
  answered: boolean;
  ready: Promise<void>;
}

async function connect(name: string): Promise<Visitor> {
  const token = await visitorToken(name);
  const ws = new WebSocket(`${base.replace("http", "ws")}/chat/ws`, { headers: { origin: base } });
  const visitor: Visitor = { ws, answered: false, ready: Promise.resolve() };
  visitor.ready = new Promise((resolve, reject) => {
    ws.on("open", () => ws.send(JSON.stringify({ type: "hello", token })));
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as ServerFrame;
      if (frame.type === "history") resolve();
      if (frame.type === "message" && frame.item.from === "bot") visitor.answered = true;
    });
    ws.on("error", reject);
  });
  return visitor;
}

// Warm-up of both paths (connections, JIT, query plans).
await telegramRound(50, 910_000_000);
const warm = await Promise.all(Array.from({ length: 20 }, (_, i) => connect(`warm-${i}`)));
await Promise.all(warm.map((v) => v.ready));
for (const [i, v] of warm.entries()) v.ws.send(JSON.stringify({ type: "message", id: `warm-message-${String(i).padStart(4, "0")}`, text: "warm up" }));
await until(() => warm.every((v) => v.answered), "the warm-up answers");
for (const v of warm) v.ws.close();

const telegramMs = await telegramRound(visitors, 920_000_000);

const before = await gatewayMemory();
const connected: Visitor[] = [];
for (let i = 0; i < visitors; i += 100) {
  const batch = await Promise.all(Array.from({ length: Math.min(100, visitors - i) }, (_, j) => connect(`visitor-${i + j}`)));
  await Promise.all(batch.map((v) => v.ready));
  connected.push(...batch);
}
const after = await gatewayMemory();

const started = performance.now();
for (const [i, v] of connected.entries()) v.ws.send(JSON.stringify({ type: "message", id: `bench-message-${String(i).padStart(6, "0")}`, text: "hello" }));
await until(() => connected.every((v) => v.answered), `${visitors} web chat answers`);
const webMs = performance.now() - started;

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
console.log(`web chat: ${visitors} visitors connected to one gateway: ${kib((after.rss - before.rss) / visitors)} RSS and ${kib((after.heap - before.heap) / visitors)} V8 heap per connection (gateway RSS ${(before.rss / 2 ** 20).toFixed(0)} → ${(after.rss / 2 ** 20).toFixed(0)} MiB)`);
console.log(`answers: ${visitors} web chat messages (one per visitor, sent at once) all answered in ${(webMs / 1000).toFixed(2)} s; baseline ${visitors} Telegram webhook messages (one per chat, 50 in flight) in ${(telegramMs / 1000).toFixed(2)} s; web / Telegram ${(webMs / telegramMs).toFixed(2)}`);

for (const v of connected) v.ws.terminate();
await Promise.all([gateway.stop(), workers.stop()]);
await Promise.all([telegram.close(), openai.close()]);
await clearQueuePrefix(TEST_REDIS_URL, prefix);
await dropDatabase(databaseUrl.toString());
process.exit(0);
