import type { ChatType, LaneMode, TriggerMode } from "@nahida/contracts";
import type { CronJob } from "@nahida/db";

/** This chat's cron jobs as `/cron` sees them; changes are made in the run's commit. */
export interface ChatCronJobs {
  list(): Promise<CronJob[]>;
  /** The chat's job whose id is, or starts with, `idOrPrefix` (at least 4 characters); null if none or several. */
  find(idOrPrefix: string): Promise<CronJob | null>;
  /** Checks now and deletes in the run's commit; the refusal's text otherwise. */
  remove(jobId: string): Promise<string | null>;
  /** Checks now (quota, an `at` that passed) and pauses or resumes in the run's commit; the refusal's text otherwise. */
  setEnabled(jobId: string, enabled: boolean): Promise<string | null>;
}

/** What a built-in command sees of the chat and run it was sent in. */
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
}
