import { badge, h, table } from "../dom";
import type { View } from "../context";

/** The value of each series of one metric in a Prometheus text exposition, by its labels. */
function series(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith(name) || (line[name.length] !== "{" && line[name.length] !== " ")) continue;
    const match = /^[^{\s]+(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels = Object.fromEntries([...(match[1] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]));
    out.push({ labels, value: Number(match[2]) });
  }
  return out;
}

const ROLE_OF_QUEUE: Record<string, string> = { lanes: "agent-worker", outbound: "delivery" };

/** Whether the deployment is well: this gateway's checks, the workers on each queue, backlogs. */
export const healthView: View = async (ctx) => {
  const [ready, metrics] = await Promise.all([ctx.api.ready(), ctx.api.metrics().catch(() => null)]);
  if (metrics === null) ctx.notify("This gateway does not serve /metrics here: the roles cannot be shown.", "bad");
  const workers = series(metrics ?? "", "nahida_queue_workers");
  const jobs = series(metrics ?? "", "nahida_queue_jobs");
  const count = (queue: string, state: string) => jobs.find((j) => j.labels.queue === queue && j.labels.state === state)?.value ?? 0;
  const openItems = series(metrics ?? "", "nahida_lane_open_items")[0]?.value;
  const oldest = series(metrics ?? "", "nahida_lane_oldest_open_item_age_seconds")[0]?.value;
  return h(
    "section",
    {},
    h("h2", {}, "Health"),
    h("h3", {}, "Gateway"),
    table(
      ["Check", "State"],
      [["ready", badge(ready.status, ready.status === "ready" ? "ok" : "bad")], ...Object.entries(ready.checks).map(([name, state]) => [name, badge(state, state === "ok" ? "ok" : "bad")])],
      { class: "checks" },
    ),
    h("h3", {}, "Roles"),
    table(
      ["Role", "Queue", "Processes consuming", "Waiting", "Active", "Delayed", "Failed"],
      workers.map((w) => {
        const queue = w.labels.queue ?? "?";
        return [ROLE_OF_QUEUE[queue] ?? queue, queue, badge(String(w.value), w.value > 0 ? "ok" : "bad"), String(count(queue, "waiting")), String(count(queue, "active")), String(count(queue, "delayed")), String(count(queue, "failed"))];
      }),
      { class: "roles" },
    ),
    h("p", { class: "muted" }, `Open lane items: ${openItems ?? "–"} · oldest ${oldest === undefined ? "–" : `${Math.round(oldest)} s`}. Each process also serves /health and /ready on NAHIDA_HEALTH_PORT.`),
    ctx.queueDashboard && ctx.can("admin") ? h("p", {}, h("a", { href: ctx.queueDashboard }, "Open the queue dashboard")) : null,
  );
};
