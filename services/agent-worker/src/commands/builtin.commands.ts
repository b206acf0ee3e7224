import type { CommandDefinition } from "./command-router";
import type { CommandContext } from "./command-context";

type Command = CommandDefinition<CommandContext>;

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
  description: "start a new session (the old one is kept)",
  handler: ({ context }) => {
    const id = context.rotateSession();
    return `Started a new session (${id.slice(0, 8)}).`;
  },
};

const reset: Command = {
  name: "reset",
  description: "forget this session's history",
  handler: async ({ context }) => {
    const n = await context.turnCount();
    context.clearHistory();
    return `Cleared this session's history (${n} turns).`;
  },
};

const stop: Command = {
  name: "stop",
  description: "stop the reply in progress",
  handler: async ({ context }) => ((await context.consumeStopped()) ? "Stopped the reply in progress." : "Nothing was running."),
};

const model: Command = {
  name: "model",
  description: "show the language model in use",
  handler: ({ context }) => (context.model ? `Model: ${context.model}` : "No language model is configured."),
};

const trigger: Command = {
  name: "trigger",
  description: "in groups: answer only when addressed (mention) or every message (always)",
  usage: "[mention|always]",
  handler: ({ context, args }) => {
    if (context.chatType === "private") return "In private chats I answer every message.";
    if (args === "") return `Trigger mode: ${context.triggerMode}. Use /trigger mention or /trigger always.`;
    if (args !== "mention" && args !== "always") return "Usage: /trigger mention|always";
    context.setTriggerMode(args);
    return args === "always" ? "I will answer every message in this chat." : "I will answer only when mentioned, replied to or commanded.";
  },
};

/** The built-in commands, matched before the agent. */
export const builtinCommands: Command[] = [help, status, newSession, reset, stop, model, trigger];
