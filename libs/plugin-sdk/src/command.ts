import type { ChatType, LaneMode, OutboundMessage, TriggerMode } from "@nahida/contracts";

/** What a command handler may return: text (sent as a reply), a full message, or nothing. */
export type CommandResult = string | Partial<OutboundMessage> | undefined | void;

export interface CommandInvocation<C> {
  name: string;
  args: string;
  context: C;
  signal: AbortSignal;
}

export interface CommandDefinition<C> {
  name: string;
  description: string;
  /** Argument hint for /help, e.g. `mention|always`. */
  usage?: string;
  handler(invocation: CommandInvocation<C>): Promise<CommandResult> | CommandResult;
}

/** `defineCommand({...})`: a command with its handler's types inferred. */
export const defineCommand = (definition: CommandDefinition<CommandContext>): CommandDefinition<CommandContext> => definition;

/** The context's methods that change the chat a command is used in, by what a refusal calls them. */
const CHAT_CHANGES = {
  rotateSession: "start a new session",
  clearHistory: "clear the history",
  setTriggerMode: "change the trigger mode",
  setQueueMode: "change the queue mode",
  setSendOverride: "change /send",
  consumeStopped: "stop a reply",
  stopSubagents: "stop sub-agents",
  compact: "compact the conversation",
} as const satisfies Partial<Record<keyof CommandContext, string>>;

/**
 * `context` as a command that may not change its chat (`chat`) or its cron jobs (`cron`)
 * sees it: a chat change throws `refusal(what, "chat")`, a cron change is refused with
 * `refusal("change cron jobs", "cron")`.
 * The host uses it for a plugin without `permissions.chat` and for a cron job's command.
 */
export function withoutChanges(context: CommandContext, refusal: (what: string, kind: "chat" | "cron") => string, o: { chat: boolean; cron: boolean }): CommandContext {
  const chat = o.chat
    ? Object.fromEntries(
        Object.entries(CHAT_CHANGES).map(([method, what]) => [
          method,
          () => {
            throw new Error(refusal(what, "chat"));
          },
        ]),
      )
    : {};
  const cronRefused = async () => refusal("change cron jobs", "cron");
  return { ...context, ...chat, ...(o.cron ? { cron: { ...context.cron, remove: cronRefused, setEnabled: cronRefused } } : {}) };
}

/** A cron job as `/cron` shows it. */
export interface ChatCronJob {
  id: string;
  name: string;
  /** The stored schedule (`CronSchedule` of contracts). */
  schedule: unknown;
  tz: string;
  enabled: boolean;
  nextRunAt: Date | null;
  disabledReason: string | null;
}

/** This chat's cron jobs as `/cron` sees them; changes are made in the run's commit. */
export interface ChatCronJobs {
  list(): Promise<ChatCronJob[]>;
  /** The chat's job whose id is, or starts with, `idOrPrefix` (at least 4 characters); null if none or several. */
  find(idOrPrefix: string): Promise<ChatCronJob | null>;
  /** Checks now and deletes in the run's commit; the refusal's text otherwise. */
  remove(jobId: string): Promise<string | null>;
  /** Checks now (quota, an `at` that passed) and pauses or resumes in the run's commit; the refusal's text otherwise. */
  setEnabled(jobId: string, enabled: boolean): Promise<string | null>;
}

/** What a command sees of the chat and run it was sent in; every change it makes is written in the run's commit. */
export interface CommandContext {
  chatAddress: string;
  chatType: ChatType;
  channel: string;
  /** The chat's current session; `/new` replaces it for the rest of the run. */
  sessionId: string;
  triggerMode: string;
  /** Role tags of the sender in this chat (`admin`, `owner`), as the ingress saw them. */
  senderRoles: string[];
  model: string | null;
  turnCount(): Promise<number>;
  /** Starts a fresh session for the chat and returns its id. */
  rotateSession(): string;
  clearHistory(): void;
  setTriggerMode(mode: TriggerMode): void;
  /** How messages that arrive while the agent works are taken: together (`collect`) or one run each (`followup`). */
  queueMode: LaneMode;
  setQueueMode(mode: LaneMode): void;
  /** Whether agents of other sessions may send into this chat: its `/send` override (null: the policy decides). */
  sendOverride: "allow" | "deny" | null;
  setSendOverride(value: "allow" | "deny" | null): void;
  cron: ChatCronJobs;
  /** True when a reply in progress was stopped by this `/stop` (and clears the mark). */
  consumeStopped(): Promise<boolean>;
  /** Stops the session's sub-agents that are still running or queued (`/stop`), in the run's commit; returns how many. */
  stopSubagents(): Promise<number>;
  commandList(): { name: string; description: string; usage?: string }[];
  /** Summarizes the session's earlier turns now (`/compact`), keeping the recent ones; what happened, as a sentence for the chat. */
  compact(): Promise<string>;
}
