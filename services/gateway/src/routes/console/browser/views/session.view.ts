import type { z } from "zod";
import type { HistoryMessage } from "@nahida/contracts";
import { badge, h, show, table, time } from "../dom";
import type { View } from "../context";

type Message = z.output<typeof HistoryMessage>;

/** The envelope line of a message: when, where and who, as the agent saw it. */
function envelope(m: Message): string | null {
  const c = m.context;
  if (!c) return null;
  return [time(c.timestamp), `${c.channel}/${c.chatType}`, c.senderLabel, ...c.roles].join(" · ");
}

function messageItem(m: Message): HTMLLIElement {
  const tools = m.tool_calls?.map((t) => badge(`calls ${t.name}`, "muted")) ?? [];
  return h(
    "li",
    { class: `turn ${m.role}${m.compacted ? " compacted" : ""}`, "data-role": m.role },
    h("div", { class: "turn-head" }, badge(m.tool_name ? `tool ${m.tool_name}` : m.role, m.role === "assistant" ? "ok" : "muted"), " ", envelope(m) ?? time(m.created_at), m.compacted ? badge("summarized", "warn") : null, ...tools),
    h("div", { class: "turn-body" }, m.content),
  );
}

/** One session: its conversation with envelopes and tool calls, its events and sub-agent tasks, and a way to write into its chat. */
export const sessionView: View = async (ctx, [id = ""]) => {
  const [session, history, events, tasks] = await Promise.all([ctx.api.session(id), ctx.api.history(id, { limit: 100 }), ctx.api.events(id), ctx.api.tasks(id)]);
  const conversation = h("ol", { class: "conversation" }, ...history.messages.map(messageItem));
  const parts: Node[] = [
    h("h2", {}, session.chat_address ?? `Session ${session.id}`),
    h("p", { class: "muted" }, `session ${session.id} · ${session.status} · last activity ${time(session.last_activity_at)}${history.truncated ? " · older messages not shown" : ""}`),
  ];
  if (history.compaction) parts.push(h("details", { class: "summary" }, h("summary", {}, `Summary of ${history.compaction.covered_turns} earlier turns`), h("div", { class: "turn-body" }, history.compaction.summary)));
  parts.push(h("h3", {}, "Conversation"), conversation);

  if (session.chat_address && ctx.can("send")) {
    const text = h("textarea", { name: "text", rows: "3", required: true, placeholder: `A message to ${session.chat_address}`, "aria-label": "Message to the chat" });
    const form = h("form", { class: "send" }, text, h("button", { type: "submit" }, "Send to chat"));
    const target = session.chat_address;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void ctx.api.send({ target, text: text.value }).then(
        (sent) => {
          text.value = "";
          ctx.notify(`Queued as delivery ${sent.delivery_id}`, "ok");
        },
        (e: Error) => ctx.notify(e.message, "bad"),
      );
    });
    parts.push(h("h3", {}, "Write into this chat"), form);
  }
  if (events.events.length > 0) {
    parts.push(h("h3", {}, "Events"), table(["Sent", "From", "Mode", "Status", "Reply or error"], events.events.map((e) => [time(e.created_at), e.source, e.mode, e.status, e.reply ?? e.error ?? "–"])));
  }
  if (tasks.tasks.length > 0) {
    parts.push(h("h3", {}, "Sub-agent tasks"), table(["Started", "Label", "Status", "Result"], tasks.tasks.map((t) => [time(t.created_at), t.label ?? t.task.slice(0, 60), t.status, t.result ?? t.error ?? "–"])));
  }
  const section = h("section", {});
  show(section, ...parts);
  return section;
};
