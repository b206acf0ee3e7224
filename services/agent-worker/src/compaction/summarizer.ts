import { z } from "zod";
import { readTurn } from "@nahida/contracts";
import type { Turn } from "@nahida/db";
import type { ChatMessage } from "../agent/llm.client";
import { estimateTokens } from "./token-estimate";

/** The sections every summary has, in this order; a summary without one of them is refused. */
export const SUMMARY_SECTIONS = ["Time range", "Channel and chat", "Participants", "Identity changes", "Decisions", "Open questions", "Identifiers"] as const;

/**
 * What the covered turns' stored envelopes say, never the model: kept on the checkpoint
 * (`facts`) and merged into the next one, so the header always spans every covered turn.
 */
export const CoveredFacts = z.object({
  first_at: z.iso.datetime(),
  last_at: z.iso.datetime(),
  /** `telegram group "Ops"`, one per chat seen. */
  chats: z.array(z.string()),
  /** Each sender label's role tags, in the order they changed (`[[], ["admin"]]`). */
  roles: z.record(z.string(), z.array(z.array(z.string()))),
});
export type CoveredFacts = z.infer<typeof CoveredFacts>;

/** The header stays a line: the chats and people seen last, and each one's last role changes. */
const MAX_CHATS = 5;
const MAX_PARTICIPANTS = 20;
const MAX_ROLE_CHANGES = 4;

const pushRoles = (seen: string[][], tags: string[]) => {
  if (seen.length === 0 || seen.at(-1)!.join(",") !== tags.join(",")) seen.push(tags);
};

/** The facts of `turns`, merged after `previous` (the last checkpoint's, when it has readable ones). */
export function coveredFacts(turns: readonly Turn[], previous: unknown = null): CoveredFacts {
  const before = CoveredFacts.safeParse(previous);
  const chats = new Set(before.success ? before.data.chats : []);
  const roles = new Map<string, string[][]>(before.success ? Object.entries(before.data.roles).map(([label, seen]) => [label, seen.map((t) => [...t])]) : []);
  for (const stored of turns) {
    const turn = readTurn(stored);
    if (!turn.ok || turn.value.role !== "user") continue;
    const context = turn.value.metadata.message_context;
    if (!context) continue;
    // Re-added at the end: the lists are in order of last appearance, and capped from the front.
    const chat = `${context.channel} ${context.chatType}${context.chatDisplayName ? ` "${context.chatDisplayName}"` : ""}`;
    chats.delete(chat);
    chats.add(chat);
    const seen = roles.get(context.senderLabel) ?? [];
    pushRoles(seen, [...context.roles].sort());
    roles.delete(context.senderLabel);
    roles.set(context.senderLabel, seen.slice(-MAX_ROLE_CHANGES));
  }
  const times = turns.map((t) => t.createdAt.getTime());
  if (before.success) times.push(Date.parse(before.data.first_at), Date.parse(before.data.last_at));
  return {
    first_at: new Date(Math.min(...times)).toISOString(),
    last_at: new Date(Math.max(...times)).toISOString(),
    chats: [...chats].slice(-MAX_CHATS),
    roles: Object.fromEntries([...roles].slice(-MAX_PARTICIPANTS)),
  };
}

const tagText = (tags: string[]) => `[${tags.join(", ")}]`;
const participants = (facts: CoveredFacts) => Object.entries(facts.roles).map(([label, seen]) => `${label} ${tagText([...new Set(seen.flat())])}`);
const roleChanges = (facts: CoveredFacts) =>
  Object.entries(facts.roles)
    .filter(([, seen]) => seen.length > 1)
    .map(([label, seen]) => `${label}: ${seen.map(tagText).join(" → ")}`);

/**
 * The checkpoint's first line: the facts of every turn it covers, from the stored
 * envelopes, so that the time range, the chats and the people are in the context whatever
 * the model wrote.
 */
export function checkpointHeader(facts: CoveredFacts, coveredTurns: number): string {
  const people = participants(facts);
  const changes = roleChanges(facts);
  const parts = [
    `summary of the ${coveredTurns} earlier turns of this conversation`,
    `${facts.first_at} to ${facts.last_at}`,
    facts.chats.length > 0 ? `in ${facts.chats.join(", ")}` : "",
    people.length > 0 ? `participants: ${people.join(", ")}` : "",
    changes.length > 0 ? `role changes: ${changes.join("; ")}` : "",
    "the turns themselves stay in the session's stored history",
  ];
  return `[${parts.filter(Boolean).join(" | ")}]`;
}

const TRANSCRIPT_MESSAGE_CHARS = 4_000;
const SHORTEST_CUT_CHARS = 120;

/** One rendered message as a transcript line, its text cut at `maxChars` (the summary keeps what matters). */
function transcriptLine(message: ChatMessage, maxChars: number): string {
  const cut = (text: string) => (text.length > maxChars ? `${text.slice(0, maxChars)}… [cut]` : text);
  switch (message.role) {
    case "assistant": {
      const calls = (message.tool_calls ?? []).map((c) => `${c.function.name}(${cut(c.function.arguments)})`);
      return `assistant: ${cut(message.content ?? "")}${calls.length > 0 ? ` [called ${calls.join(", ")}]` : ""}`;
    }
    case "tool":
      return `tool result: ${cut(message.content)}`;
    default:
      return `${message.role}: ${cut(message.content)}`;
  }
}

/**
 * The summarizer's request: the previous summary (when there is one, it is carried into the
 * new one, not summarized again on its own) and the covered turns as they were rendered to
 * the model, envelopes (time, channel, sender and roles) included.
 */
/**
 * The covered turns as transcript lines within `budgetTokens`: every message is cut shorter
 * (down to a floor) until they fit, so that the summarizer's own request fits the window
 * however much there is to summarize.
 */
function transcript(covered: readonly ChatMessage[], budgetTokens: number): string[] {
  let maxChars = TRANSCRIPT_MESSAGE_CHARS;
  const cost = (lines: string[]) => lines.reduce((n, line) => n + estimateTokens(line) + 1, 0);
  for (;;) {
    const lines = covered.map((message) => transcriptLine(message, maxChars));
    if (cost(lines) <= budgetTokens) return lines;
    if (maxChars > SHORTEST_CUT_CHARS) {
      maxChars = Math.max(SHORTEST_CUT_CHARS, Math.floor(maxChars / 2));
      continue;
    }
    // Still too long at the shortest cut: the oldest lines go, and the summary says so.
    let used = 0;
    let from = lines.length;
    while (from > 0 && used + estimateTokens(lines[from - 1]!) + 1 <= budgetTokens - 20) used += estimateTokens(lines[--from]!) + 1;
    return [`[${from} older turns left out: too many to summarize at once]`, ...lines.slice(from)];
  }
}

export function summaryRequest(o: { previous: string | null; covered: readonly ChatMessage[]; facts: CoveredFacts; maxTokens: number; budgetTokens: number }): ChatMessage[] {
  const system = [
    "You compact a chat conversation. Your summary replaces the turns below in an assistant's context; the assistant keeps only the summary and the most recent turns.",
    `Write Markdown with exactly these sections, each a '## ' heading, in this order: ${SUMMARY_SECTIONS.join(", ")}. Write "none" under a section with nothing to say.`,
    "- Time range: when the covered conversation started and ended (the envelopes give the times).",
    "- Channel and chat: the channel(s) and chat(s) it happened in.",
    "- Participants: the people by their labels as they appear in the envelopes, with their role tags.",
    "- Identity changes: renames and role changes (someone became admin, a new name for the same person).",
    "- Decisions: what was agreed or done, and by whom.",
    "- Open questions: what is still unanswered or pending, promises the assistant made.",
    "- Identifiers: ids, URLs, file paths, order or ticket numbers, amounts and dates, copied verbatim.",
    `Be concise: at most about ${Math.floor(o.maxTokens * 0.6)} words. Write in the conversation's language. Do not address anyone; only summarize.`,
  ].join("\n");
  const people = participants(o.facts);
  const changes = roleChanges(o.facts);
  const facts = [
    `Known from the messages themselves: ${o.facts.first_at} to ${o.facts.last_at}`,
    o.facts.chats.length > 0 ? `chats: ${o.facts.chats.join(", ")}` : "",
    people.length > 0 ? `participants: ${people.join(", ")}` : "",
    changes.length > 0 ? `role changes: ${changes.join("; ")}` : "",
  ].filter(Boolean);
  const previous = o.previous === null ? [] : ["The summary of what came before these turns (carry everything that still matters into yours):", o.previous, ""];
  const user = [...previous, facts.join(" | "), "", "The turns to summarize, oldest first:", ...transcript(o.covered, o.budgetTokens)].join("\n");
  return [
    { role: "system", content: system },
    { role: "user", content: user },
  ];
}

/** The model's summary, if it has every section; the reason otherwise. */
export function checkSummary(text: string | null): { ok: true; summary: string } | { ok: false; reason: string } {
  const summary = (text ?? "").trim();
  if (summary === "") return { ok: false, reason: "the summarizer answered nothing" };
  const missing = SUMMARY_SECTIONS.filter((section) => !new RegExp(`^#{1,4}\\s*${section}\\b`, "im").test(summary));
  if (missing.length > 0) return { ok: false, reason: `the summary lacks the section${missing.length === 1 ? "" : "s"} ${missing.join(", ")}` };
  return { ok: true, summary };
}
