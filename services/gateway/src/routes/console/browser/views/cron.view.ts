import type { z } from "zod";
import type { CronJobView } from "@nahida/contracts";
import { badge, button, h, show, table, time } from "../dom";
import type { ConsoleContext, View } from "../context";

type Job = z.output<typeof CronJobView>;

function scheduleText(job: Job): string {
  const s = job.schedule;
  switch (s.kind) {
    case "cron":
      return `${s.expr} (${job.tz})`;
    case "every":
      return `every ${s.every_ms / 1000} s`;
    case "at":
      return `at ${s.at}`;
  }
}

function payloadText(job: Job): string {
  const p = job.payload;
  switch (p.kind) {
    case "notify":
      return p.text;
    case "agent_turn":
      return `agent: ${p.prompt}`;
    case "command":
      return p.command;
  }
}

/** A job's runs, shown under its row. */
async function history(ctx: ConsoleContext, job: Job, into: HTMLElement): Promise<void> {
  const runs = await ctx.api.cronRuns(job.id);
  show(into, table(["Slot", "Status", "Manual", "Attempt", "Error", "Finished"], runs.runs.map((r) => [time(r.slot), badge(r.status, r.status === "succeeded" ? "ok" : r.status === "failed" ? "bad" : "muted"), r.manual ? "yes" : "", String(r.attempt), r.error ?? "–", time(r.finished_at)]), { class: "runs", "data-job": job.id }));
}

function createForm(ctx: ConsoleContext, reload: () => Promise<void>): HTMLFormElement {
  const name = h("input", { name: "name", required: true, placeholder: "Daily report" });
  const target = h("input", { name: "target", required: true, placeholder: "telegram:group:-100123" });
  const kind = h("select", { name: "kind" }, h("option", { value: "cron" }, "cron expression"), h("option", { value: "every" }, "every N seconds"));
  const when = h("input", { name: "when", required: true, placeholder: "0 9 * * * or 3600" });
  const text = h("textarea", { name: "text", rows: "2", required: true, placeholder: "The message to send" });
  const form = h("form", { class: "grid" }, h("label", {}, "Name", name), h("label", {}, "Target", target), h("label", {}, "Schedule", kind, when), h("label", {}, "Message", text), h("button", { type: "submit" }, "Create job"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const schedule = kind.value === "every" ? { kind: "every" as const, every_ms: Math.round(Number(when.value) * 1000) } : { kind: "cron" as const, expr: when.value };
    void ctx.api.createCron({ name: name.value, target: target.value, schedule, payload: { kind: "notify", text: text.value } }).then(
      async (job) => {
        form.reset();
        ctx.notify(`Created ${job.name}; next run ${time(job.next_run_at)}`, "ok");
        await reload();
      },
      (e: Error) => ctx.notify(e.message, "bad"),
    );
  });
  return form;
}

/** Cron jobs: their next and last runs, create, pause or resume, run now, and each one's history. */
export const cronView: View = async (ctx) => {
  const list = h("div", {});
  const load = async () => {
    const { jobs } = await ctx.api.cronJobs();
    show(
      list,
      table(
        ["Name", "Schedule", "Target", "Does", "Next run", "Last run", ""],
        jobs.map((job) => {
          const runs = h("div", { class: "history" });
          const actions = h(
            "div",
            { class: "actions" },
            ctx.can("cron") &&
              button(job.enabled ? "Pause" : "Resume", async () => {
                await ctx.api.updateCron(job.id, { enabled: !job.enabled }).catch((e: Error) => ctx.notify(e.message, "bad"));
                await load();
              }),
            ctx.can("cron") &&
              button("Run now", async () => {
                try {
                  await ctx.api.runCron(job.id);
                  ctx.notify(`${job.name} runs now`, "ok");
                } catch (e) {
                  ctx.notify((e as Error).message, "bad");
                }
              }),
            button("History", () => history(ctx, job, runs).catch((e: Error) => ctx.notify(e.message, "bad"))),
          );
          return [
            h("span", {}, job.name, job.enabled ? null : badge("paused", "warn"), job.disabled_reason ? badge(job.disabled_reason, "bad") : null),
            scheduleText(job),
            job.target,
            payloadText(job),
            time(job.next_run_at),
            job.last_run ? h("span", {}, time(job.last_run.slot), " ", badge(job.last_run.status, job.last_run.status === "succeeded" ? "ok" : "muted")) : "–",
            h("div", {}, actions, runs),
          ];
        }),
        { class: "cron" },
      ),
    );
  };
  await load();
  return h("section", {}, h("h2", {}, "Cron jobs"), list, ctx.can("cron") ? h("div", {}, h("h3", {}, "New job"), createForm(ctx, load)) : null);
};
