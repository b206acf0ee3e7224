import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pushPrivateText, startDeployment, type Deployment } from "../support/deployment";
import { waitFor } from "../support/infra";
import { TEST_BOT_TOKEN, sentTo, startHarness, type Harness } from "../support/nahida-harness";
import { freePort } from "../support/ports";

/** Sample values by `name{labels}` as exposed, after checking every sample has its `# TYPE`. */
function parseExposition(text: string): Map<string, number> {
  const typed = new Set<string>();
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("# HELP ")) continue;
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      expect(typed.has(type[1]!), `${type[1]} typed twice`).toBe(false);
      typed.add(type[1]!);
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    expect(sample, `not a sample line: ${line}`).not.toBeNull();
    const name = sample![1]!;
    const family = name.replace(/_(bucket|sum|count|total)$/, "");
    expect(typed.has(name) || typed.has(family), `${name} has no # TYPE`).toBe(true);
    samples.set(`${name}${sample![2] ?? ""}`, Number(sample![3]));
  }
  return samples;
}

async function scrape(base: string): Promise<{ text: string; samples: Map<string, number> }> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  return { text, samples: parseExposition(text) };
}

describe("/metrics of separate processes (NAHIDA_HEALTH_PORT)", () => {
  let d: Deployment;
  const base: Record<"ingress" | "worker" | "delivery", string> = { ingress: "", worker: "", delivery: "" };
  beforeAll(async () => {
    d = await startDeployment("metrics", []);
    const ports = { ingress: await freePort(), worker: await freePort(), delivery: await freePort() };
    await Promise.all([
      d.start("ingress-telegram", { NAHIDA_HEALTH_PORT: String(ports.ingress) }),
      d.start("agent-worker", { NAHIDA_HEALTH_PORT: String(ports.worker) }),
      d.start("delivery", { NAHIDA_HEALTH_PORT: String(ports.delivery) }),
    ]);
    for (const role of ["ingress", "worker", "delivery"] as const) base[role] = `http://127.0.0.1:${ports[role]}`;
  }, 120_000);
  afterAll(async () => {
    await d?.close();
  });

  it("answers in the Prometheus text format with every series, before any traffic", async () => {
    const worker = await scrape(base.worker);
    for (const name of [
      "nahida_queue_job_wait_seconds",
      "nahida_queue_job_duration_seconds",
      "nahida_lane_runs_total",
      "nahida_lane_run_duration_seconds",
      "nahida_llm_calls_total",
      "nahida_llm_tokens_total",
      "nahida_llm_call_duration_seconds",
      "nahida_deliveries_total",
      "nahida_delivery_send_duration_seconds",
      "nahida_delivery_rate_limited_total",
      "nahida_inbound_events_total",
      "nahida_cron_fires_total",
      "nahida_cron_fire_lag_seconds",
      "nahida_queue_jobs",
      "nahida_lane_open_items",
      "nahida_lane_oldest_open_item_age_seconds",
      "nahida_subagent_tasks",
      "nahida_subagent_spawn_refusals_total",
      "nahida_subagent_tasks_ended_total",
      "process_cpu_seconds_total",
    ]) {
      expect(worker.text, name).toMatch(new RegExp(`^# TYPE ${name.replace(/_total$/, "")}(_total)? `, "m"));
    }
    // Read at scrape time from Redis and Postgres.
    for (const queue of ["lanes", "outbound"]) {
      for (const state of ["waiting", "active", "delayed", "failed"]) expect(worker.samples.get(`nahida_queue_jobs{queue="${queue}",state="${state}"}`)).toBe(0);
    }
    expect(worker.samples.get("nahida_lane_open_items")).toBe(0);
    expect(worker.samples.get("nahida_lane_oldest_open_item_age_seconds")).toBe(0);
  });

  it("a delivered message moves the counters of the process that handled each hop", async () => {
    d.openai.enqueue({ content: "Hello from the metrics test" });
    pushPrivateText(d.telegram, 5550001, "count me");
    await d.telegram.waitForCalls("sendMessage", 1, 30_000);

    // The delivery records its outcome after the send returns: wait for the counter, not the call.
    const delivery = await waitFor(async () => {
      const s = await scrape(base.delivery);
      return s.samples.get('nahida_deliveries_total{channel="telegram",outcome="sent"}') === 1 ? s : undefined;
    }, 10_000, "the counters");
    expect(delivery.samples.get('nahida_delivery_send_duration_seconds_count{channel="telegram",outcome="ok"}')).toBe(1);
    expect(delivery.samples.get('nahida_queue_job_duration_seconds_count{queue="outbound",outcome="completed"}')).toBeGreaterThanOrEqual(1);
    expect(delivery.samples.get('nahida_queue_job_wait_seconds_count{queue="outbound"}')).toBeGreaterThanOrEqual(1);
    // Nothing of this hop happened here.
    expect(delivery.samples.get('nahida_llm_calls_total{model="fake-model",outcome="ok"}')).toBeUndefined();

    const worker = await waitFor(async () => {
      const s = await scrape(base.worker);
      return s.samples.get('nahida_lane_runs_total{outcome="completed"}') === 1 ? s : undefined;
    }, 10_000, "the counters");
    expect(worker.samples.get('nahida_llm_calls_total{model="fake-model",outcome="ok"}')).toBe(1);
    expect(worker.samples.get('nahida_llm_call_duration_seconds_count{model="fake-model",outcome="ok"}')).toBe(1);
    expect(worker.samples.get('nahida_llm_tokens_total{model="fake-model",direction="in"}')).toBeGreaterThan(0);
    expect(worker.samples.get('nahida_llm_tokens_total{model="fake-model",direction="out"}')).toBeGreaterThan(0);
    expect(worker.samples.get('nahida_lane_run_duration_seconds_count{outcome="completed"}')).toBe(1);
    expect(worker.samples.get('nahida_queue_job_duration_seconds_count{queue="lanes",outcome="completed"}')).toBeGreaterThanOrEqual(1);
    expect(worker.samples.get('nahida_deliveries_total{channel="telegram",outcome="sent"}')).toBeUndefined();

    const ingress = await scrape(base.ingress);
    expect(ingress.samples.get('nahida_inbound_events_total{channel="telegram",outcome="stored"}')).toBe(1);

    // No chat id, token or URL in any label.
    for (const text of [delivery.text, worker.text, ingress.text]) {
      expect(text).not.toContain("5550001");
      expect(text).not.toContain(TEST_BOT_TOKEN.split(":")[1]);
      expect(text).not.toMatch(/="https?:/);
    }
  });

  it("a 429 counts as rate limited and waiting, then sent once the wait is over", async () => {
    d.telegram.failNext("sendMessage", { status: 429, retryAfter: 1 }, { chatId: 5550002 });
    d.openai.enqueue({ content: "After the rate limit" });
    pushPrivateText(d.telegram, 5550002, "again");
    const delivery = await waitFor(async () => {
      const s = await scrape(base.delivery);
      return s.samples.get('nahida_deliveries_total{channel="telegram",outcome="sent"}') === 2 ? s : undefined;
    }, 20_000, "the send after the 429");
    expect(delivery.samples.get('nahida_delivery_rate_limited_total{channel="telegram"}')).toBe(1);
    expect(delivery.samples.get('nahida_deliveries_total{channel="telegram",outcome="waiting"}')).toBe(1);
    expect(delivery.samples.get('nahida_delivery_send_duration_seconds_count{channel="telegram",outcome="error"}')).toBe(1);
    expect(delivery.samples.get('nahida_queue_job_duration_seconds_count{queue="outbound",outcome="delayed"}')).toBeGreaterThanOrEqual(1);
  });
});

describe("/metrics of the gateway (all services in one process)", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness("metrics_gw");
  });
  afterAll(async () => {
    await h?.close();
  });

  it("is served on the gateway's port without a token, from the process's one registry", async () => {
    h.openai.enqueue({ content: "One process" });
    h.telegram.pushUpdate({
      message: { message_id: 1, from: { id: 5550003, is_bot: false, first_name: "F" }, chat: { id: 5550003, type: "private", first_name: "F" }, date: 1778400180, text: "hi" },
    });
    await sentTo(h, 5550003, 1);
    const gateway = await waitFor(async () => {
      const s = await scrape(h.nahida.gatewayAddress!);
      return s.samples.get('nahida_deliveries_total{channel="telegram",outcome="sent"}') === 1 ? s : undefined;
    }, 10_000, "the delivery counter on the gateway");
    expect(gateway.samples.get('nahida_inbound_events_total{channel="telegram",outcome="stored"}')).toBe(1);
    expect(gateway.samples.get('nahida_llm_calls_total{model="fake-model",outcome="ok"}')).toBe(1);
    expect((await h.nahida.metrics.render()).body).toContain('nahida_deliveries_total{channel="telegram",outcome="sent"} 1');
  });
});
