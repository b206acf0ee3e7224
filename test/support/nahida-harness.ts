import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatEnvIssues } from "@nahida/config";
import { readLauncherEnv, startNahida, type NahidaExtensions, type RunningNahida } from "@nahida/launcher";
import { createLogger } from "@nahida/observability";
import { startFakeOpenAI, type FakeOpenAI, type StartFakeOpenAIOptions } from "../fakes/openai.fake";
import { startFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.fake";
import { TEST_POSTGRES_URL, TEST_REDIS_URL, clearQueuePrefix, dropDatabase, testQueuePrefix, uniqueName, waitFor } from "./infra";
import { freePort } from "./ports";
import { spawnTsProcess, type SpawnedProcess } from "./processes";

export const TEST_BOT_TOKEN = "7000000001:TEST-token_abc";

export interface Harness {
  nahida: RunningNahida;
  telegram: FakeTelegram;
  openai: FakeOpenAI;
  workspaceDir: string;
  databaseUrl: string;
  prefix: string;
  close(): Promise<void>;
}

/**
 * The real services in this process (the same composition `npm start` builds), with a
 * fresh database and queue prefix, pointed at fake Telegram and OpenAI servers through
 * configuration only.
 */
export async function startHarness(
  label: string,
  env: Record<string, string> = {},
  extensions: NahidaExtensions = {},
  fakes: { openai?: StartFakeOpenAIOptions } = {},
): Promise<Harness> {
  const telegram = await startFakeTelegram({ botUsername: "nahida_test_bot", botId: 7000000001 });
  const openai = await startFakeOpenAI(fakes.openai);
  const workspaceDir = await mkdtemp(join(tmpdir(), "nahida-ws-"));
  const url = new URL(TEST_POSTGRES_URL);
  url.pathname = `/nahida_t_${uniqueName(label)}`;
  const prefix = testQueuePrefix(label);
  const parsed = await readLauncherEnv({
    DATABASE_URL: url.toString(),
    REDIS_URL: TEST_REDIS_URL,
    NAHIDA_QUEUE_PREFIX: prefix,
    GATEWAY_PORT: String(await freePort()),
    TELEGRAM_BOT_TOKEN: TEST_BOT_TOKEN,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    TELEGRAM_POLL_TIMEOUT_SECONDS: "1",
    TELEGRAM_WEBHOOK_PORT: String(await freePort()),
    OPENAI_BASE_URL: openai.baseURL,
    OPENAI_API_KEY: "test-key",
    OPENAI_MODEL: "fake-model",
    NAHIDA_WORKSPACE_DIR: workspaceDir,
    NAHIDA_TIMEZONE: "Asia/Shanghai",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    ...env,
  });
  if (!parsed.ok) throw new Error(formatEnvIssues(parsed.error));
  const nahida = await startNahida(parsed.value, createLogger({ level: parsed.value.LOG_LEVEL, service: `test-${label}` }), extensions);
  return {
    nahida,
    telegram,
    openai,
    workspaceDir,
    databaseUrl: url.toString(),
    prefix,
    async close() {
      await nahida.stop();
      await telegram.close();
      await openai.close();
      await clearQueuePrefix(TEST_REDIS_URL, prefix);
      await dropDatabase(url.toString());
    },
  };
}

/**
 * Another gateway process on the harness's database and queues, as a second replica behind
 * a load balancer; resolves once it has started, with its base URL.
 */
export async function spawnGatewayReplica(
  h: Harness,
  apiToken: string,
  options: { env?: Record<string, string>; port?: number } = {},
): Promise<{ process: SpawnedProcess; base: string; port: number }> {
  const port = options.port ?? (await freePort());
  const child = await spawnTsProcess(
    "services/launcher/src/main.ts",
    {
      DATABASE_URL: h.databaseUrl,
      REDIS_URL: TEST_REDIS_URL,
      NAHIDA_QUEUE_PREFIX: h.prefix,
      NAHIDA_SERVICES: "gateway",
      GATEWAY_PORT: String(port),
      NAHIDA_API_TOKEN: apiToken,
      TELEGRAM_BOT_TOKEN: TEST_BOT_TOKEN,
      TELEGRAM_API_ROOT: h.telegram.apiRoot,
      NAHIDA_WORKSPACE_DIR: h.workspaceDir,
      LOG_LEVEL: "info",
      ...options.env,
    },
    { readyText: "nahida started", timeoutMs: 45_000 },
  );
  return { process: child, base: `http://127.0.0.1:${port}`, port };
}

/** Waits until the fake Telegram has recorded `count` sends (messages, photos, documents) to a chat. */
export async function sentTo(h: Harness, chatId: number | string, count: number, timeoutMs = 15_000) {
  return waitFor(
    async () => {
      const calls = h.telegram.sent(chatId);
      return calls.length >= count ? calls : undefined;
    },
    timeoutMs,
    `${count} send(s) to chat ${chatId}`,
  );
}
