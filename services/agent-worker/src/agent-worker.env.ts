import { z } from "zod";
import { positiveMs } from "@nahida/config";
import { validateTimeZone } from "./context/envelope";

export const agentWorkerEnvSchema = z.object({
  /** API key of the OpenAI-compatible endpoint (optional for local servers). */
  OPENAI_API_KEY: z.string().min(1).optional(),
  /** Base URL of an OpenAI-compatible API; with neither this nor a key, no LLM is used. */
  OPENAI_BASE_URL: z.url({ message: "must be a URL like https://api.openai.com/v1" }).optional(),
  OPENAI_MODEL: z.string().min(1).default("gpt-4o-mini"),
  /** Directory with AGENTS.md / SOUL.md / USER.md and files the agent may read or send. */
  NAHIDA_WORKSPACE_DIR: z.string().min(1).optional(),
  /** The bot's IANA time zone, used in message envelopes. */
  NAHIDA_TIMEZONE: z.string().refine(validateTimeZone, { message: "must be an IANA time zone such as Asia/Shanghai or UTC" }).default("UTC"),
  AGENT_MAX_ITERATIONS: z.coerce.number().int().min(1).max(50).default(8),
  /** Turns after the newest compaction checkpoint an agent call reads at most; reaching it compacts (docs/compaction.md). */
  AGENT_HISTORY_TURNS: z.coerce.number().int().min(1).max(2000).default(100),
  /** The model's context window in tokens: prompts are compacted before they pass AGENT_COMPACT_THRESHOLD of it. */
  NAHIDA_CONTEXT_TOKENS: z.coerce.number().int().min(4_000).max(10_000_000).default(128_000),
  /** The share of the window a prompt may reach before the oldest turns are summarized. */
  AGENT_COMPACT_THRESHOLD: z.coerce.number().min(0.2).max(0.95).default(0.8),
  AGENT_COMMAND_TIMEOUT_MS: positiveMs.default(10_000),
  /** Sessions run at the same time in one agent-worker process. */
  AGENT_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
  /** The old name of NAHIDA_LEASE_MS, still read when that is unset. Shim: removed in 0.2.0. */
  LANE_LEASE_MS: z.coerce.number().int().min(1_000).max(300_000).optional(),
  /** The loop guard: agent events between sessions chain at most this deep, whichever plugin's tool sends them. */
  AGENT_EVENT_MAX_DEPTH: z.coerce.number().int().min(1).max(100).default(5),
  /** Sub-agents one run of a main session may start (docs/subagents.md). */
  AGENT_SUBAGENT_MAX_CHILDREN: z.coerce.number().int().min(1).max(50).default(5),
  /** Sub-agents running at once across the deployment (a durable semaphore in Postgres); the same on every replica. */
  AGENT_SUBAGENT_MAX_RUNNING: z.coerce.number().int().min(1).max(1_000).default(8),
  /** A sub-agent still running after this many seconds is ended as timed_out (its spawn may ask for less or more). */
  AGENT_SUBAGENT_TIMEOUT_S: z.coerce.number().int().min(10).max(86_400).default(900),
  /** Characters of the parent's conversation a sub-agent spawned with context `fork` gets. */
  AGENT_SUBAGENT_FORK_CHARS: z.coerce.number().int().min(0).max(200_000).default(12_000),
  /** A delivery still queued after this long expires instead of arriving late. */
  NAHIDA_DELIVERY_TTL_MS: positiveMs.default(3_600_000),
});
export type AgentWorkerEnv = z.infer<typeof agentWorkerEnvSchema>;
