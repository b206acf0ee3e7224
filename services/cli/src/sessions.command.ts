import { parseArgs } from "node:util";
import type { z } from "zod";
import type { HistoryView, SessionEventAccepted, SessionEventRequest, SessionEventView, SessionList, SessionView } from "@nahida/contracts";
import type { ApiRequest } from "./api.client";
import { UsageError } from "./usage-error";
import { idArgument, wholeNumber } from "./cli-args";

export const SESSIONS_USAGE = `  sessions list [--channel NAME] [--active-since ISO] [--limit N] [--offset N] [--json]
                                  sessions, most recently active first
  sessions show <id> [--json]     one session
  sessions history <id> [--limit N] [--offset N] [--json]
                                  its filtered history (offset 0 is the latest page)
  sessions send <id> <message> [--mode record_only|enqueue] [--wait SECONDS] [--json]
                                  an operator event into the session: record_only writes it into the
                                  history, enqueue (the default) also runs a turn; --wait follows it
  sessions event <id> <event id> [--json]
                                  where an event stands (queued, running, done with the reply, failed)`;

/** What a command prints, and the exit status it ends with. */
export interface CommandResult {
  output: unknown;
  exitCode: 0 | 1;
}

const POLL_MS = 500;

/** States after which nothing more happens to an event. */
const FINAL: ReadonlySet<SessionEventView["status"]> = new Set(["recorded", "done", "failed"]);

const ok = (output: unknown): CommandResult => ({ output, exitCode: 0 });

function sessionListText(list: z.infer<typeof SessionList>): string {
  if (list.sessions.length === 0) return `no sessions (${list.total} in all)`;
  const rows = [["ID", "CHANNEL", "CHAT", "STATUS", "LAST ACTIVE"], ...list.sessions.map((s) => [s.id, s.channel ?? "-", s.chat_address ?? "-", s.status, s.last_activity_at])];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const lines = rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "));
  const first = list.offset + 1;
  return `${lines.join("\n")}\n${first}-${list.offset + list.sessions.length} of ${list.total} sessions`;
}

function sessionText(s: SessionView): string {
  return [
    `id:          ${s.id}`,
    `chat:        ${s.chat_address ?? "-"}`,
    `channel:     ${s.channel ?? "-"}`,
    `status:      ${s.status}`,
    `title:       ${s.title ?? "-"}`,
    `parent:      ${s.parent_id ?? "-"}`,
    `created:     ${s.created_at}`,
    `last active: ${s.last_activity_at}`,
  ].join("\n");
}

function historyText(h: HistoryView, offset: number): string {
  if (h.messages.length === 0) return `no messages on this page (${h.total} in all)`;
  const lines = h.messages.map((m) => {
    const extra = m.tool_calls?.length ? ` [calls ${m.tool_calls.map((c) => c.name).join(", ")}]` : m.tool_name ? ` [${m.tool_name}]` : "";
    return `${m.created_at}  ${m.role} (${m.source})${extra}\n  ${m.content.replaceAll("\n", "\n  ")}`;
  });
  // Pages count back from the newest message, each page oldest first.
  const last = h.total - offset;
  const footer = `messages ${last - h.messages.length + 1}-${last} of ${h.total}${h.truncated ? " (cut or filtered; older messages may exist)" : ""}`;
  return `${lines.join("\n")}\n${footer}`;
}

function eventText(e: SessionEventView): string {
  const head = `event ${e.event_id} in session ${e.session_id}: ${e.status}${e.run_id ? ` (run ${e.run_id})` : ""}`;
  if (e.status === "done") return e.reply ? `${head}\nreply: ${e.reply}` : `${head}, without a reply`;
  if (e.status === "failed") return `${head}\nerror: ${e.error ?? "unknown"}`;
  return head;
}

/**
 * Polls the event until it is final or `waitSeconds` have passed, and reports the last state
 * it saw: a run that is still going at the deadline is reported as still going, never as
 * answered or lost.
 */
async function follow(api: ApiRequest, path: string, waitSeconds: number, json: boolean): Promise<CommandResult> {
  const deadline = Date.now() + waitSeconds * 1000;
  for (;;) {
    const event = await api<SessionEventView>("GET", path);
    const final = FINAL.has(event.status);
    const remainingMs = deadline - Date.now();
    if (final || remainingMs <= 0) {
      const exitCode = event.status === "failed" || !final ? 1 : 0;
      if (json) return { output: event, exitCode };
      const note = final ? "" : `\nstill ${event.status} after ${waitSeconds} s; follow it with: nahida sessions event ${event.session_id} ${event.event_id}`;
      return { output: `${eventText(event)}${note}`, exitCode };
    }
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, remainingMs)));
  }
}

/** `nahida sessions ...`: the /api/sessions routes. */
export async function sessionsCommand(api: ApiRequest, [sub, ...args]: string[]): Promise<CommandResult> {
  switch (sub) {
    case "list": {
      const { values } = parseArgs({
        args,
        options: { channel: { type: "string" }, "active-since": { type: "string" }, limit: { type: "string" }, offset: { type: "string" }, json: { type: "boolean" } },
      });
      // The server checks the values (a malformed channel name or instant).
      const query = new URLSearchParams({
        ...(values.channel ? { channel: values.channel } : {}),
        ...(values["active-since"] ? { active_since: values["active-since"] } : {}),
        ...(values.limit ? { limit: String(wholeNumber(values.limit, "--limit")) } : {}),
        ...(values.offset ? { offset: String(wholeNumber(values.offset, "--offset")) } : {}),
      });
      const list = await api<z.infer<typeof SessionList>>("GET", `/api/sessions${query.size ? `?${query}` : ""}`);
      return ok(values.json ? list : sessionListText(list));
    }
    case "show": {
      const id = idArgument(args, "sessions show needs a session id");
      const { values } = parseArgs({ args: args.slice(1), options: { json: { type: "boolean" } } });
      const session = await api<SessionView>("GET", `/api/sessions/${id}`);
      return ok(values.json ? session : sessionText(session));
    }
    case "history": {
      const id = idArgument(args, "sessions history needs a session id");
      const { values } = parseArgs({ args: args.slice(1), options: { limit: { type: "string" }, offset: { type: "string" }, json: { type: "boolean" } } });
      const offset = values.offset ? wholeNumber(values.offset, "--offset") : 0;
      const query = new URLSearchParams({ ...(values.limit ? { limit: String(wholeNumber(values.limit, "--limit")) } : {}), offset: String(offset) });
      const history = await api<HistoryView>("GET", `/api/sessions/${id}/history?${query}`);
      return ok(values.json ? history : historyText(history, offset));
    }
    case "send": {
      const id = idArgument(args, "sessions send needs a session id and a message");
      const { values, positionals } = parseArgs({
        args: args.slice(1),
        allowPositionals: true,
        options: { mode: { type: "string" }, wait: { type: "string" }, json: { type: "boolean" } },
      });
      const message = positionals.join(" ");
      if (!message) throw new UsageError("sessions send needs a message");
      if (values.mode !== undefined && values.mode !== "record_only" && values.mode !== "enqueue") throw new UsageError("--mode must be record_only or enqueue");
      const waitSeconds = values.wait !== undefined ? wholeNumber(values.wait, "--wait") : undefined;
      const body: z.input<typeof SessionEventRequest> = { message, ...(values.mode ? { mode: values.mode } : {}) };
      const accepted = await api<SessionEventAccepted>("POST", `/api/sessions/${id}/events`, body);
      if (waitSeconds === undefined) {
        return ok(values.json ? accepted : `event ${accepted.event_id} ${accepted.status}; follow it with: nahida sessions event ${decodeURIComponent(id)} ${accepted.event_id}`);
      }
      return follow(api, `/api/sessions/${id}/events/${accepted.event_id}`, waitSeconds, values.json ?? false);
    }
    case "event": {
      const id = idArgument(args, "sessions event needs a session id and an event id");
      const eventId = idArgument(args.slice(1), "sessions event needs a session id and an event id");
      const { values } = parseArgs({ args: args.slice(2), options: { json: { type: "boolean" } } });
      const event = await api<SessionEventView>("GET", `/api/sessions/${id}/events/${eventId}`);
      return ok(values.json ? event : eventText(event));
    }
    default:
      throw new UsageError(`unknown sessions command ${JSON.stringify(sub ?? "")}`);
  }
}
