import { z } from "zod";

/** A plugin id: lower case, digits and `-`, 2–40 characters; its variables are `PLUGIN_<ID>_*`. */
export const PluginId = z.string().regex(/^[a-z][a-z0-9-]{1,39}$/, "must be 2-40 characters of a-z, 0-9 and -, starting with a letter");

/** A tool's or command's name as the model or a chat sees it. */
const ToolName = z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, "must be a-z, 0-9 and _, starting with a letter");
const CommandName = z.string().regex(/^[a-z][a-z0-9_]{0,31}$/, "must be a-z, 0-9 and _, starting with a letter (without the /)");

/**
 * How a channel's ingress and sender reach their platform, declared so an operator (and a
 * future remote channel host) knows what to open: a listening HTTP server (webhooks), HTTP
 * requests out, a WebSocket (either side), or a server-sent event stream.
 */
export const ChannelTransport = z.enum(["http-server", "http-client", "websocket-server", "websocket-client", "sse"]);
export type ChannelTransport = z.infer<typeof ChannelTransport>;

/**
 * A host a plugin's `fetch` may reach: a host name (`api.open-meteo.com`), every subdomain
 * of one (`*.example.com`), or `config:<key>` for the host of the URL the operator sets in
 * that config key (a self-hosted endpoint).
 */
const NetworkHost = z
  .string()
  .regex(/^(config:[a-z][a-z0-9_]{0,63}|(\*\.)?[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?)$/i, "must be a host name, *.<domain> or config:<key>");

/** A send target a plugin may address: a chat address with `*` for any rest (`telegram:group:*`), or `*` for any chat. */
const SendTarget = z.string().regex(/^(\*|[a-z][a-z0-9_-]*(:[^:\s*]+)*(:\*)?)$/, "must be a chat address, one ending in :* or *");

/**
 * What a plugin may do beyond answering in the chat it was called from. Each is checked
 * where it can be: at start (a capability used in `register` that was not declared), and
 * on every call (a fetch, a workspace path, a send, a cron job, an event).
 */
export const PluginPermissions = z.strictObject({
  /** Hosts the `fetch` handed to the plugin may reach (redirects included). Default none. */
  network: z.array(NetworkHost).max(50).default([]),
  /** The bot's workspace directory: `none` (default) or `read` (writing is not offered to plugins yet). */
  workspace: z.enum(["none", "read"]).default("none"),
  /** Chats its tools and commands may send to beyond the one they were called in (`*`: any, within the send policy). */
  send: z.array(SendTarget).max(50).default([]),
  /** May create, edit and delete cron jobs. */
  cron: z.boolean().default(false),
  /** May send events into other sessions and start sub-agents. */
  sessions: z.boolean().default(false),
  /** A command may change the chat it is used in: its session (new, reset), trigger and queue modes, `/send` override, a stop. */
  chat: z.boolean().default(false),
  /** May read the ledger: sessions, their history and runs, cron jobs, tasks, the send policy. */
  ledger: z.enum(["none", "read"]).default("none"),
});
export type PluginPermissions = z.infer<typeof PluginPermissions>;

/**
 * `plugin.yaml`: everything the host checks before it runs any of the plugin's code.
 * Unknown fields are refused (a typo must not silently mean "not declared").
 */
export const PluginManifest = z.strictObject({
  id: PluginId,
  name: z.string().trim().min(1).max(100),
  /** The plugin's own version (semver). */
  version: z.string().min(1).max(64),
  description: z.string().max(500).optional(),
  /** The module to import, relative to the plugin's directory; its default export is a `definePlugin(...)`. */
  entry: z.string().min(1).max(300),
  /** The host versions it runs on (a semver range, `>=0.1 <1`). */
  nahida: z.string().min(1).max(100),
  /** The plugin API versions it was written against (a semver range, `^1.0`). */
  sdk: z.string().min(1).max(100),
  provides: z
    .strictObject({
      tools: z.array(ToolName).max(100).default([]),
      commands: z.array(CommandName).max(100).default([]),
      channels: z.array(z.strictObject({ kind: z.string().regex(/^[a-z][a-z0-9_-]{0,31}$/, "must match [a-z][a-z0-9_-]*"), transports: z.array(ChannelTransport).min(1) })).max(20).default([]),
    })
    .default({ tools: [], commands: [], channels: [] }),
  /** The JSON Schema of its configuration, generated from the code's zod schema (`configJsonSchema`). */
  config: z.record(z.string(), z.unknown()).optional(),
  permissions: PluginPermissions.default(PluginPermissions.parse({})),
});
export type PluginManifest = z.infer<typeof PluginManifest>;

/**
 * The JSON Schema `plugin.yaml` carries for a config schema: what the host compares with the
 * manifest at load (they must be equal), and what docs and the console show.
 */
export function configJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  return rest;
}
