import type { z } from "zod";
import type { DeliveryView } from "@nahida/contracts";
import { badge, button, h, show, table, time } from "../dom";
import type { ConsoleContext, View } from "../context";

type Delivery = z.output<typeof DeliveryView>;

const TONES: Record<string, "ok" | "warn" | "bad" | "muted"> = { sent: "ok", queued: "muted", sending: "warn", failed: "bad", expired: "bad" };

function rows(ctx: ConsoleContext, deliveries: Delivery[], reload: () => Promise<void>) {
  return deliveries.map((d) => [
    time(d.created_at),
    d.target,
    h("span", {}, badge(d.status, TONES[d.status] ?? "muted"), d.uncertain ? badge(`uncertain part ${d.uncertain_parts.join(", ")}`, "warn") : null),
    String(d.attempts),
    d.source,
    d.error ?? "–",
    (d.status === "failed" || d.status === "expired") && ctx.can("send")
      ? button("Retry", async () => {
          try {
            await ctx.api.retryDelivery(d.id);
            ctx.notify(`Delivery ${d.id} is queued again`, "ok");
            await reload();
          } catch (e) {
            ctx.notify((e as Error).message, "bad");
          }
        }, { "data-delivery": d.id })
      : null,
  ]);
}

/** Deliveries that need a look first (failed or expired, then uncertain), then the newest. */
export const deliveriesView: View = async (ctx) => {
  const section = h("section", {});
  const headers = ["Created", "Target", "Status", "Attempts", "Source", "Error", ""];
  const load = async () => {
    const [failed, expired, uncertain, recent] = await Promise.all([
      ctx.api.deliveries({ status: "failed", limit: 50 }),
      ctx.api.deliveries({ status: "expired", limit: 50 }),
      ctx.api.deliveries({ uncertain: true, limit: 50 }),
      ctx.api.deliveries({ limit: 50 }),
    ]);
    show(
      section,
      h("h2", {}, "Deliveries"),
      h("h3", {}, `Failed or expired (${failed.total + expired.total})`),
      table(headers, rows(ctx, [...failed.deliveries, ...expired.deliveries].sort((a, b) => b.created_at.localeCompare(a.created_at)), load), { class: "failed" }),
      h("h3", {}, `Uncertain (${uncertain.total})`),
      h("p", { class: "muted" }, "A part whose sending worker died before it was recorded: sent again under at_least_once (it may show twice), skipped under at_most_once."),
      table(headers, rows(ctx, uncertain.deliveries, load), { class: "uncertain" }),
      h("h3", {}, "Newest"),
      table(headers, rows(ctx, recent.deliveries, load), { class: "recent" }),
    );
  };
  await load();
  return section;
};
