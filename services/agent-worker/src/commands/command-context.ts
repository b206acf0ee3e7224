import type { ChatType, TriggerMode } from "@nahida/contracts";

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
  /** True when a reply in progress was stopped by this `/stop` (and clears the mark). */
  consumeStopped(): Promise<boolean>;
  commandList(): { name: string; description: string; usage?: string }[];
}
