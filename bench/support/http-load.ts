import { Agent, request } from "node:http";
import { percentile } from "./latency";

/** A keep-alive HTTP client for JSON POSTs with at most `maxSockets` connections. */
export function createJsonPoster(maxSockets: number) {
  const agent = new Agent({ keepAlive: true, maxSockets });
  return {
    /** POSTs `body` as JSON; resolves with the status once the answer was read. */
    post(url: URL, body: unknown, headers: Record<string, string> = {}): Promise<number> {
      const payload = JSON.stringify(body);
      return new Promise((resolve, reject) => {
        const req = request(
          url,
          {
            method: "POST",
            agent,
            headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload), ...headers },
          },
          (res) => {
            res.on("data", () => undefined);
            res.on("end", () => resolve(res.statusCode ?? 0));
            res.on("error", reject);
          },
        );
        req.on("error", reject);
        req.end(payload);
      });
    },
    close: () => agent.destroy(),
  };
}

export interface LoadResult {
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers other than `expectedStatus`, by status. */
  unexpected: Map<number, number>;
}

/**
 * Sends `requests` POSTs with `concurrency` in flight and measures throughput (first send
 * to last answer) and each request's latency.
 */
export async function runPostLoad(o: {
  requests: number;
  concurrency: number;
  expectedStatus: number;
  send: (index: number) => Promise<number>;
}): Promise<LoadResult> {
  const latencies: number[] = [];
  const unexpected = new Map<number, number>();
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: o.concurrency }, async () => {
      while (next < o.requests) {
        const index = next++;
        const t = performance.now();
        const status = await o.send(index).catch(() => 0);
        latencies.push(performance.now() - t);
        if (status !== o.expectedStatus) unexpected.set(status, (unexpected.get(status) ?? 0) + 1);
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  latencies.sort((a, b) => a - b);
  return {
    requests: o.requests,
    requestsPerSecond: (o.requests * 1000) / elapsedMs,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    unexpected,
  };
}
