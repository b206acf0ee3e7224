import { h, link, show, table, time } from "../dom";
import type { View } from "../context";

/** Sessions, most recently active first, searched by chat address (a visitor, a chat id). */
export const sessionsView: View = async (ctx) => {
  const results = h("div", { class: "results" });
  const search = h("input", { type: "search", name: "chat", placeholder: "Search by chat (telegram:private:123, web:private:visitor, …)", "aria-label": "Search sessions by chat" });
  const form = h("form", { class: "toolbar" }, search, h("button", { type: "submit" }, "Search"));
  const load = async () => {
    const page = await ctx.api.sessions({ chat: search.value.trim() || undefined, limit: 50 });
    show(
      results,
      h("p", { class: "muted" }, `${page.total} session${page.total === 1 ? "" : "s"}`),
      table(
        ["Chat", "Title", "Status", "Last activity"],
        page.sessions.map((s) => [link(`/sessions/${s.id}`, s.chat_address ?? `session ${s.id.slice(0, 8)}`), s.title ?? "–", s.status, time(s.last_activity_at)]),
        { class: "sessions" },
      ),
    );
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void load().catch((e: Error) => ctx.notify(e.message, "bad"));
  });
  await load();
  return h("section", {}, h("h2", {}, "Sessions"), form, results);
};
