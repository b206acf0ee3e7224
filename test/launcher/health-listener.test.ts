import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeTelegram, type FakeTelegram } from "../fakes/telegram-bot-api.fake";
import { TEST_POSTGRES_URL, TEST_REDIS_URL, clearQueuePrefix, dropDatabase, testQueuePrefix, uniqueName, waitFor } from "../support/infra";
import { TEST_BOT_TOKEN } from "../support/nahida-harness";
import { freePort } from "../support/ports";
import { spawnTsProcess, type SpawnedProcess } from "../support/processes";

const MAIN = "services/launcher/src/main.ts";

async function probe(base: string, path: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`);
  return { status: res.status, body: await res.json() };
}

describe("probe listener of every role (NAHIDA_HEALTH_PORT)", () => {
  const databaseUrl = (() => {
    const url = new URL(TEST_POSTGRES_URL);
    url.pathname = `/nahida_t_${uniqueName("health")}`;
    return url.toString();
  })();
  const prefix = testQueuePrefix("health");
  let telegram: FakeTelegram;
  const processes: SpawnedProcess[] = [];

  async function launch(env: Record<string, string>): Promise<{ proc: SpawnedProcess; base: string }> {
    const port = await freePort();
    const proc = await spawnTsProcess(
      MAIN,
      {
        DATABASE_URL: databaseUrl,
        REDIS_URL: TEST_REDIS_URL,
        NAHIDA_QUEUE_PREFIX: prefix,
        NAHIDA_HEALTH_PORT: String(port),
        TELEGRAM_BOT_TOKEN: TEST_BOT_TOKEN,
        TELEGRAM_API_ROOT: telegram.apiRoot,
        TELEGRAM_POLL_TIMEOUT_SECONDS: "1",
        NAHIDA_LEASE_MS: "3000",
        LOG_LEVEL: "info",
        ...env,
      },
      { readyText: "nahida started", timeoutMs: 60_000 },
    );
    processes.push(proc);
    return { proc, base: `http://127.0.0.1:${port}` };
  }

  beforeAll(async () => {
    telegram = await startFakeTelegram();
  });
  afterAll(async () => {
    for (const proc of processes) proc.kill("SIGTERM");
    await Promise.all(processes.map((p) => p.exited));
    await telegram?.close();
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await dropDatabase(databaseUrl);
  });

  it("answers /health and /ready for workers, with Postgres, Redis and each consumer; gateway probes stay out of the info log", async () => {
    const gatewayPort = await freePort();
    const { proc, base } = await launch({ NAHIDA_SERVICES: "gateway,agent-worker,delivery", GATEWAY_PORT: String(gatewayPort) });
    expect(await probe(base, "/health")).toEqual({ status: 200, body: { status: "ok" } });
    const ready = await waitFor(async () => {
      const res = await probe(base, "/ready");
      return res.status === 200 ? res.body : undefined;
    }, 20_000, "/ready");
    expect(ready).toEqual({ status: "ready", checks: { postgres: "ok", redis: "ok", gateway: "ok", "agent-worker": "ok", delivery: "ok" } });

    const gateway = `http://127.0.0.1:${gatewayPort}`;
    for (let i = 0; i < 3; i++) expect((await fetch(`${gateway}/api/ready`)).status).toBe(200);
    expect((await fetch(`${gateway}/api/health`)).status).toBe(200);
    // A request that is logged, sent after the probes: once its line is out, theirs would be too.
    expect((await fetch(`${gateway}/api/marker-after-probes`)).status).toBe(404);
    await waitFor(async () => proc.output().includes('"url":"/api/marker-after-probes"'), 10_000, "the marker request in the log");
    expect(proc.output()).not.toContain('"url":"/api/ready"');
    expect(proc.output()).not.toContain('"url":"/api/health"');
  });

  it("counts a Telegram follower as ready, and the leader only while getUpdates answers", async () => {
    const a = await launch({ NAHIDA_SERVICES: "ingress-telegram" });
    const b = await launch({ NAHIDA_SERVICES: "ingress-telegram" });
    const bothReady = () =>
      waitFor(async () => {
        const answers = await Promise.all([probe(a.base, "/ready"), probe(b.base, "/ready")]);
        return answers.every((r) => r.status === 200) ? answers : undefined;
      }, 20_000, "both replicas ready");
    for (const answer of await bothReady()) {
      expect(answer.body).toEqual({ status: "ready", checks: { postgres: "ok", redis: "ok", "ingress-telegram": "ok" } });
    }

    // Only the leader polls: when getUpdates fails, exactly one replica is not ready.
    telegram.failNext("getUpdates", { status: 502 }, { times: 1_000 });
    const split = await waitFor(async () => {
      const answers = await Promise.all([probe(a.base, "/ready"), probe(b.base, "/ready")]);
      return answers.some((r) => r.status === 503) ? answers : undefined;
    }, 20_000, "the leader to report failing polls");
    expect(split.map((r) => r.status).sort()).toEqual([200, 503]);
    expect(split.find((r) => r.status === 503)!.body).toEqual({
      status: "not_ready",
      checks: { postgres: "ok", redis: "ok", "ingress-telegram": "telegram: getUpdates is failing" },
    });

    telegram.reset();
    await bothReady();
  });
});
