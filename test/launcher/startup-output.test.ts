import { afterAll, describe, expect, it } from "vitest";
import { TEST_POSTGRES_URL, TEST_REDIS_URL, clearQueuePrefix, dropDatabase, testQueuePrefix, uniqueName } from "../support/infra";
import { TEST_BOT_TOKEN } from "../support/nahida-harness";
import { freePort } from "../support/ports";
import { spawnTsProcess } from "../support/processes";
import { startFakeTelegram } from "../fakes/telegram-bot-api.fake";

const MAIN = "services/launcher/src/main.ts";
const count = (text: string, needle: string) => text.split(needle).length - 1;

describe("startup output for people", () => {
  const databases: string[] = [];
  const prefixes: string[] = [];
  afterAll(async () => {
    for (const url of databases) await dropDatabase(url);
    for (const prefix of prefixes) await clearQueuePrefix(TEST_REDIS_URL, prefix);
  });

  function baseEnv(label: string): Record<string, string> {
    const url = new URL(TEST_POSTGRES_URL);
    url.pathname = `/nahida_t_${uniqueName(label)}`;
    databases.push(url.toString());
    const prefix = testQueuePrefix(label);
    prefixes.push(prefix);
    return { DATABASE_URL: url.toString(), REDIS_URL: TEST_REDIS_URL, NAHIDA_QUEUE_PREFIX: prefix, LOG_LEVEL: "info" };
  }

  it("with LOG_FORMAT=pretty prints one human line per service with its URLs, and warns once about a missing token and channel", async () => {
    const port = await freePort();
    const healthPort = await freePort();
    const proc = await spawnTsProcess(
      MAIN,
      { ...baseEnv("startup_pretty"), NAHIDA_SERVICES: "gateway,delivery,scheduler", GATEWAY_PORT: String(port), NAHIDA_HEALTH_PORT: String(healthPort), LOG_FORMAT: "pretty" },
      { readyText: "nahida started", timeoutMs: 60_000 },
    );
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    const output = proc.output();
    const a = `http://127.0.0.1:${port}`;
    expect(output).toContain(`gateway: API ${a}/api · docs ${a}/api/docs · console ${a}/console · queues ${a}/admin/queues · ready ${a}/api/ready`);
    expect(output).toContain("delivery: sending to no channel, 16 at once");
    expect(output).toContain("scheduler: polling every 250 ms at most, time zone UTC");
    expect(output).toContain(`probes: live http://127.0.0.1:${healthPort}/health · ready http://127.0.0.1:${healthPort}/ready`);
    expect(count(output, "no API token is configured")).toBe(1);
    expect(count(output, "no channel is configured")).toBe(1);
    // Human lines, not JSON objects.
    const lines = output.split("\n").filter((l) => l.trim() !== "");
    expect(lines.some((l) => l.trimStart().startsWith("{"))).toBe(false);
    expect(lines.find((l) => l.includes("gateway: API"))).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: gateway: API/);
  });

  it("stays JSON by default, and says nothing about a token or a channel that is configured", async () => {
    const telegram = await startFakeTelegram();
    try {
      const port = await freePort();
      const proc = await spawnTsProcess(
        MAIN,
        {
          ...baseEnv("startup_json"),
          NAHIDA_SERVICES: "gateway,ingress-telegram",
          GATEWAY_PORT: String(port),
          NAHIDA_API_TOKEN: "test-admin-token-startup-0123456789",
          TELEGRAM_BOT_TOKEN: TEST_BOT_TOKEN,
          TELEGRAM_API_ROOT: telegram.apiRoot,
        },
        { readyText: "nahida started", timeoutMs: 60_000 },
      );
      proc.kill("SIGTERM");
      expect(await proc.exited).toBe(0);
      const lines = proc.output().split("\n").filter((l) => l.trim() !== "");
      const records = lines.map((l) => JSON.parse(l) as { msg: string });
      const messages = records.map((r) => r.msg);
      expect(messages).toContain("ingress-telegram: telegram · bot nahida_test_bot · mode polling");
      expect(messages.some((m) => m.startsWith(`gateway: API http://127.0.0.1:${port}/api`))).toBe(true);
      expect(messages).toContain("nahida started");
      expect(messages.filter((m) => /no API token|no channel/.test(m))).toEqual([]);
    } finally {
      await telegram.close();
    }
  });
});
