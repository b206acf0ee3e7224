import { readTurn, sanitizeHistoryText } from "@nahida/contracts";

/** Longest single message in a forked context. */
const MESSAGE_MAX_CHARS = 2_000;

/**
 * A parent's conversation as a `fork` child gets it: its user, assistant and event turns as
 * `role: text` lines (tool traffic, reasoning, base64 and temporary URLs left out), the
 * newest kept first until `budgetChars`, then in their order. Empty when nothing fits.
 */
export function renderForkContext(turns: readonly { role: string; content: string; metadata?: unknown }[], budgetChars: number): string {
  const lines: string[] = [];
  let used = 0;
  for (const turn of [...turns].reverse()) {
    const line = forkLine(turn);
    if (line === null) continue;
    if (used + line.length + 1 > budgetChars) break;
    lines.push(line);
    used += line.length + 1;
  }
  return lines.reverse().join("\n");
}

function forkLine(turn: { role: string; content: string; metadata?: unknown }): string | null {
  const read = readTurn({ role: turn.role, metadata: turn.metadata ?? {} });
  if (!read.ok || read.value.role === "tool" || read.value.role === "system") return null;
  const text = sanitizeHistoryText(turn.content, MESSAGE_MAX_CHARS).text.trim();
  if (text === "") return null;
  const typed = read.value;
  const who = typed.role === "user" ? `user ${typed.metadata.message_context?.senderLabel ?? ""}`.trim() : typed.role;
  return `${who}: ${text.replace(/\n+/g, " ")}`;
}
