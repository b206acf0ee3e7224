import { describe, expect, it } from "vitest";
import { createMetrics } from "./metrics";

describe("createMetrics", () => {
  it("reads the scrape-time gauges from their sources at each scrape", async () => {
    let now = 100_000;
    const metrics = createMetrics({ now: () => now });
    let waiting = 3;
    metrics.setSources({
      queueJobs: async () => [{ queue: "outbound", state: "waiting", count: waiting }],
      openLaneItems: async () => ({ count: 2, oldestCreatedAt: new Date(40_000) }),
    });
    let { body } = await metrics.render();
    expect(body).toContain('nahida_queue_jobs{queue="outbound",state="waiting"} 3');
    expect(body).toContain("nahida_lane_open_items 2");
    expect(body).toContain("nahida_lane_oldest_open_item_age_seconds 60");
    waiting = 0;
    now = 160_000;
    ({ body } = await metrics.render());
    expect(body).toContain('nahida_queue_jobs{queue="outbound",state="waiting"} 0');
    expect(body).toContain("nahida_lane_oldest_open_item_age_seconds 120");
  });

  it("leaves a failing source's gauges out of the scrape and reports it, without failing the scrape", async () => {
    const failures: string[] = [];
    const metrics = createMetrics({ onSourceError: (source, e) => failures.push(`${source}: ${e.message}`) });
    metrics.setSources({ queueJobs: async () => Promise.reject(new Error("redis away")), openLaneItems: async () => ({ count: 0, oldestCreatedAt: null }) });
    metrics.delivery.deliveries.inc({ channel: "telegram", outcome: "sent" });
    const { body, contentType } = await metrics.render();
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(body).not.toMatch(/^nahida_queue_jobs\{/m);
    expect(body).toContain("nahida_lane_oldest_open_item_age_seconds 0");
    expect(body).toContain('nahida_deliveries_total{channel="telegram",outcome="sent"} 1');
    expect(failures).toEqual(["queueJobs: redis away"]);
  });

  it("keeps one registry per call: two processes' worth of metrics do not share counts", async () => {
    const a = createMetrics();
    const b = createMetrics();
    a.inbound.events.inc({ channel: "telegram", outcome: "stored" });
    expect((await a.render()).body).toContain('nahida_inbound_events_total{channel="telegram",outcome="stored"} 1');
    expect((await b.render()).body).not.toContain('nahida_inbound_events_total{channel="telegram"');
  });
});

describe("the lane gauges", () => {
  it("share one read per scrape", async () => {
    let reads = 0;
    const metrics = createMetrics({ now: () => 10_000 });
    metrics.setSources({ openLaneItems: async () => ({ count: ++reads, oldestCreatedAt: new Date(4_000) }) });
    const { body } = await metrics.render();
    expect(reads).toBe(1);
    expect(body).toContain("nahida_lane_open_items 1");
    expect(body).toContain("nahida_lane_oldest_open_item_age_seconds 6");
  });
});
