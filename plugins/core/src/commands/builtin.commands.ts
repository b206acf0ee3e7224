import { LaneMode, TriggerMode } from "@nahida/contracts";
import type { CommandContext, CommandDefinition } from "@nahida/plugin-sdk";

type Command = CommandDefinition<CommandContext>;

/**
 * In groups, commands that change the chat for everyone need an admin or the owner; the
 * answer says so instead of acting. Null when the sender may go ahead.
 */
function refuseUnlessGroupAdmin(context: CommandContext): string | null {
  if (context.chatType === "private") return null;
  if (context.senderRoles.includes("admin") || context.senderRoles.includes("owner")) return null;
  return "Only group admins can do that here.";
}

const help: Command = {
  name: "help",
  description: "list the commands",
  handler: ({ context }) =>
    ["Commands:", ...context.commandList().map((c) => `/${c.name}${c.usage ? ` ${c.usage}` : ""} — ${c.description}`)].join("\n"),
};

const status: Command = {
  name: "status",
  description: "show this chat's session and settings",
  handler: async ({ context }) => {
    const lines = [
      `Session ${context.sessionId.slice(0, 8)} · ${await context.turnCount()} turns`,
      `Model: ${context.model ?? "not configured"}`,
    ];
    if (context.chatType !== "private") lines.push(`Replies in this chat: ${context.triggerMode === "always" ? "to every message" : "when mentioned, replied to or commanded"}`);
    return lines.join("\n");
  },
};

const newSession: Command = {
  name: "new",
  description: "start a new session (the old one is kept; group admins only in groups)",
  handler: ({ context }) => {
    const refused = refuseUnlessGroupAdmin(context);
    if (refused) return refused;
    const id = context.rotateSession();
    return `Started a new session (${id.slice(0, 8)}).`;
  },
};

const reset: Command = {
  name: "reset",
  description: "forget this session's history (group admins only in groups)",
  handler: async ({ context }) => {
    const refused = refuseUnlessGroupAdmin(context);
    if (refused) return refused;
    const n = await context.turnCount();
    context.clearHistory();
    return `Cleared this session's history (${n} turns).`;
  },
};

const stop: Command = {
  name: "stop",
  description: "stop the reply in progress and this conversation's sub-agents",
  handler: async ({ context }) => {
    const [stopped, children] = [await context.consumeStopped(), await context.stopSubagents()];
    const subagents = children === 0 ? "" : ` Stopped ${children} sub-agent${children === 1 ? "" : "s"}.`;
    if (stopped) return `Stopped the reply in progress.${subagents}`;
    return children === 0 ? "Nothing was running." : subagents.trim();
  },
};

const model: Command = {
  name: "model",
  description: "show the language model in use",
  handler: ({ context }) => (context.model ? `Model: ${context.model}` : "No language model is configured."),
};

const trigger: Command = {
  name: "trigger",
  description: "in groups: answer only when addressed (mention) or every message (always); admins only",
  usage: "[mention|always]",
  handler: ({ context, args }) => {
    if (context.chatType === "private") return "In private chats I answer every message.";
    if (args === "") return `Trigger mode: ${context.triggerMode}. Use /trigger mention or /trigger always.`;
    const mode = TriggerMode.safeParse(args);
    if (!mode.success) return `Usage: /trigger ${TriggerMode.options.join("|")}`;
    const refused = refuseUnlessGroupAdmin(context);
    if (refused) return refused;
    context.setTriggerMode(mode.data);
    return mode.data === "always" ? "I will answer every message in this chat." : "I will answer only when mentioned, replied to or commanded.";
  },
};

const QUEUE_MODE_TEXT: Record<LaneMode, string> = {
  collect: "messages that arrive while I work are answered together",
  followup: "messages that arrive while I work are answered one by one",
  interrupt: "a message that arrives while I work stops the answer in progress, and I answer everything together",
};

const queue: Command = {
  name: "queue",
  description: "how messages sent while I work are answered: together (collect), one by one (followup), or by starting over with all of them (interrupt); group admins only in groups",
  usage: "[collect|followup|interrupt]",
  handler: ({ context, args }) => {
    if (args === "") return `Queue mode: ${context.queueMode} (${QUEUE_MODE_TEXT[context.queueMode]}). Use /queue collect, /queue followup or /queue interrupt.`;
    const mode = LaneMode.safeParse(args);
    if (!mode.success) return `Usage: /queue ${LaneMode.options.join("|")}`;
    const refused = refuseUnlessGroupAdmin(context);
    if (refused) return refused;
    context.setQueueMode(mode.data);
    return `Queue mode set to ${mode.data}: ${QUEUE_MODE_TEXT[mode.data]}.`;
  },
};

const SEND_SETTINGS = { on: "allow", off: "deny", inherit: null } as const;

const send: Command = {
  name: "send",
  description: "whether agents of other sessions may send into this chat: on, off, or inherit the send policy (owner or admins)",
  usage: "[on|off|inherit]",
  handler: ({ context, args }) => {
    const now = context.sendOverride === "allow" ? "on" : context.sendOverride === "deny" ? "off" : "inherit (the send policy decides)";
    if (args === "") return `Sends from other sessions: ${now}. Use /send on, /send off or /send inherit.`;
    if (!Object.hasOwn(SEND_SETTINGS, args)) return "Usage: /send on|off|inherit";
    const refused = refuseUnlessGroupAdmin(context);
    if (refused) return refused;
    const value = SEND_SETTINGS[args as keyof typeof SEND_SETTINGS];
    context.setSendOverride(value);
    if (value === "allow") return "Agents of other sessions may send into this chat.";
    if (value === "deny") return "Agents of other sessions can no longer send into this chat.";
    return "Sends into this chat follow the send policy again.";
  },
};

const describeSchedule = (schedule: unknown, tz: string): string => {
  const s = schedule as { kind: string; expr?: string; every_ms?: number; at?: string };
  if (s.kind === "cron") return `cron ${s.expr} (${tz})`;
  if (s.kind === "every") return `every ${s.every_ms! >= 60_000 ? `${Math.round(s.every_ms! / 60_000)} min` : `${Math.round(s.every_ms! / 1000)} s`}`;
  return `once at ${s.at} (${tz})`;
};

const cron: Command = {
  name: "cron",
  description: "this chat's scheduled jobs: list, or delete / pause / resume one (group admins only in groups)",
  usage: "list | delete <id> | pause <id> | resume <id>",
  handler: async ({ context, args }) => {
    const [action = "list", id] = args.split(/\s+/).filter(Boolean);
    if (action === "list") {
      const jobs = await context.cron.list();
      if (jobs.length === 0) return "No scheduled jobs in this chat.";
      return [
        "Scheduled jobs:",
        ...jobs.map(
          (j) =>
            `${j.id.slice(0, 8)} · ${j.name} · ${describeSchedule(j.schedule, j.tz)} · ${j.enabled ? `next ${j.nextRunAt?.toISOString() ?? "none"}` : `paused${j.disabledReason ? ` (${j.disabledReason})` : ""}`}`,
        ),
      ].join("\n");
    }
    if (!["delete", "pause", "resume"].includes(action) || !id) return "Usage: /cron list | delete <id> | pause <id> | resume <id>";
    const refused = refuseUnlessGroupAdmin(context);
    if (refused) return refused;
    const job = await context.cron.find(id);
    if (!job) return `No job ${id} in this chat (or the id is ambiguous); /cron list shows them.`;
    if (action === "delete") {
      const refusal = await context.cron.remove(job.id);
      return refusal ? `Could not delete "${job.name}": ${refusal}` : `Deleted "${job.name}".`;
    }
    const refusal = await context.cron.setEnabled(job.id, action === "resume");
    if (refusal) return `Could not ${action} "${job.name}": ${refusal}`;
    return action === "resume" ? `Resumed "${job.name}".` : `Paused "${job.name}".`;
  },
};

const compact: Command = {
  name: "compact",
  description: "summarize the earlier conversation now, keeping the recent messages (nothing is deleted; group admins only in groups)",
  handler: ({ context }) => refuseUnlessGroupAdmin(context) ?? context.compact(),
};

/** The built-in commands, matched before the agent. */
export const builtinCommands: Command[] = [help, status, newSession, reset, stop, compact, model, trigger, queue, send, cron];
