import type { z } from "zod";
import type { ChannelModule } from "@nahida/channels";
import type { Clock, Result } from "@nahida/contracts";
import type {
  BackgroundTaskRepository,
  CompactionRepository,
  CronRepository,
  PolicyRepository,
  RunRepository,
  SessionEventRepository,
  SessionRepository,
  TurnRepository,
} from "@nahida/db";
import type { CommandDefinition, CommandContext } from "./command";
import type { ToolDefinition } from "./tool";

/**
 * Read access to the ledger (`permissions.ledger: read`): what the built-in session, cron
 * and sub-agent tools read. Writes never go through here: they are a tool's effects, made
 * through its `context.outbox` in the run's fenced commit.
 */
export interface LedgerReader {
  sessions: Pick<SessionRepository, "get" | "getChat" | "canSee" | "overview">;
  turns: Pick<TurnRepository, "page">;
  events: Pick<SessionEventRepository, "state">;
  runs: Pick<RunRepository, "recentRuns">;
  policies: Pick<PolicyRepository, "sendPolicy">;
  cron: Pick<CronRepository, "get" | "list">;
  tasks: Pick<BackgroundTaskRepository, "getMany" | "listByParent">;
  compactions: Pick<CompactionRepository, "forHistory">;
}

/** The bot's workspace as a plugin may use it (`permissions.workspace`); every path stays inside it. */
export interface PluginWorkspace {
  /** The absolute path of `relativePath`, or why it is refused (outside, a symlink out, not a regular file). */
  resolve(relativePath: string): Promise<Result<string, { message: string }>>;
  /** The file's text; throws with the reason when it is refused or larger than `maxBytes`. */
  readText(relativePath: string, maxBytes: number): Promise<string>;
}

/** Structured log lines, tagged with the plugin's id. */
export interface PluginLogger {
  debug(fields: Record<string, unknown>, message: string): void;
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/** What the deployment tells every plugin about itself. */
export interface PluginHost {
  /** The host's version (the one the manifest's `nahida` range was checked against). */
  version: string;
  /** The bot's IANA time zone (`NAHIDA_TIMEZONE`). */
  timeZone: string;
  /** The names of every tool of the deployment, once all plugins are registered. */
  toolNames(): string[];
}

/**
 * What `register(api)` receives. Capabilities a manifest did not ask for throw a
 * {@link PluginPermissionError} when touched: in `register`, the plugin is refused at start;
 * in a tool, the call fails with the reason.
 */
export interface PluginApi<Config = unknown> {
  readonly id: string;
  /** The plugin's configuration, parsed by its schema from `PLUGIN_<ID>_<KEY>` variables. */
  readonly config: Config;
  readonly logger: PluginLogger;
  readonly clock: Clock;
  readonly host: PluginHost;
  /** `fetch` that reaches only the manifest's `permissions.network` hosts, redirects included. */
  readonly fetch: typeof globalThis.fetch;
  /** The workspace (`permissions.workspace`); null when the deployment has none. */
  readonly workspace: PluginWorkspace | null;
  /** The ledger, for reading (`permissions.ledger: read`); usable once the services started. */
  readonly ledger: LedgerReader;
  /** A tool the model may call; its name must be in the manifest's `provides.tools`. */
  tool(definition: ToolDefinition): void;
  /** A chat command, matched before the agent; in `provides.commands`. */
  command(definition: CommandDefinition<CommandContext>): void;
  /** A channel kind (ingress and sender); its kind in `provides.channels`. */
  channel(module: ChannelModule): void;
}

/** A capability used that the manifest does not grant. */
export class PluginPermissionError extends Error {
  override name = "PluginPermissionError";
  constructor(
    readonly plugin: string,
    readonly permission: string,
    message: string,
  ) {
    super(message);
  }
}

export interface PluginDefinition<S extends z.ZodType = z.ZodType> {
  /** Must equal the manifest's `id`. */
  id: string;
  /** The configuration's schema; plugin.yaml's `config` is its JSON Schema (`configJsonSchema`). */
  config?: S;
  /** Registers the plugin's tools, commands and channels. Runs once per process, before any service starts. */
  register(api: PluginApi<z.infer<S>>): void | Promise<void>;
}

/** What the host imports: the definition, marked so a wrong default export is a clear refusal. */
export type NahidaPlugin<S extends z.ZodType = z.ZodType> = PluginDefinition<S> & { readonly kind: "nahida-plugin" };

/** A plugin's entry module: `export default definePlugin({ id, config, register(api) { ... } })`. */
export function definePlugin<S extends z.ZodType = z.ZodType>(definition: PluginDefinition<S>): NahidaPlugin<S> {
  return { ...definition, kind: "nahida-plugin" };
}

export const isNahidaPlugin = (value: unknown): value is NahidaPlugin =>
  typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "nahida-plugin" && typeof (value as { register?: unknown }).register === "function";
