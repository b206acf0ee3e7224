import { pathToFileURL } from "node:url";
import { realpath } from "node:fs/promises";
import { join, resolve } from "node:path";
import { isDeepStrictEqual } from "node:util";
import type { ChannelModule } from "@nahida/channels";
import { err, ok, systemClock, type Clock, type Result } from "@nahida/contracts";
import {
  PluginPermissionError,
  SDK_VERSION,
  configJsonSchema,
  isNahidaPlugin,
  type CommandContext,
  type CommandDefinition,
  type LedgerReader,
  type NahidaPlugin,
  type PluginApi,
  type PluginLogger,
  type PluginManifest,
  type ToolDefinition,
} from "@nahida/plugin-sdk";
import { guardCommand, guardTool, pluginWorkspace } from "./plugin-guards";
import { guardedFetch } from "./plugin-fetch";
import { isInside } from "@nahida/workspace";
import { locatePlugin, rangeRefusal, readManifest } from "./plugin-manifest.reader";
import { LoadedPlugins, type LoadedPlugin } from "./loaded-plugins";
import { LoadedPluginBindings, type PluginBindings } from "./plugin-bindings";

/** One plugin to load: an npm package name or a directory. */
export interface PluginEntry {
  spec: string;
  /** Shipped with the host (its own package.json lists it), rather than named in NAHIDA_PLUGINS. */
  bundled: boolean;
  /** Where its config variables start; default `PLUGIN_<ID>_`. */
  envPrefix?: string;
  /** Resolve `spec` from here instead of the options' `baseDir` (a bundled plugin, from the host's own package). */
  from?: string;
  /**
   * The entry module, when the host imports it itself instead of by the manifest's `entry`
   * path: a bundled plugin's code is part of the host's build, where no TypeScript file is
   * left to import.
   */
  load?: () => Promise<unknown>;
}

/** A plugin refused at start, or a config variable of one; one line each. */
export interface PluginIssue {
  /** The plugin's id when its manifest was read, otherwise the entry as given. */
  plugin: string;
  message: string;
  /** A config variable to blame, as the operator sets it. */
  variable?: string;
}

export interface LoadPluginsOptions {
  entries: readonly PluginEntry[];
  /** Directory NAHIDA_PLUGINS paths and package names are resolved from. */
  baseDir: string;
  /** The whole environment; each plugin's config is read from its prefixed variables. */
  env: Readonly<Record<string, string | undefined>>;
  hostVersion: string;
  timeZone: string;
  /** The bot's workspace; plugins are never loaded from inside it (an agent or user could put code there). */
  workspaceDir?: string;
  clock?: Clock;
  /** Where a module is imported from; tests give their own. */
  importModule?: (url: string) => Promise<unknown>;
}

/** `core` → `PLUGIN_CORE_`, `rss-feeds` → `PLUGIN_RSS_FEEDS_`. */
export const pluginEnvPrefix = (id: string) => `PLUGIN_${id.toUpperCase().replaceAll("-", "_")}_`;

interface Found {
  entry: PluginEntry;
  dir: string;
  manifest: PluginManifest;
}

/**
 * Finds and checks every plugin's manifest without running plugin code: the schema, the
 * host and plugin API ranges, ids and provided names that must be unique across plugins,
 * and a directory outside the workspace. Every problem is reported, not just the first.
 */
async function checkManifests(o: LoadPluginsOptions): Promise<Result<Found[], PluginIssue[]>> {
  const issues: PluginIssue[] = [];
  const found: Found[] = [];
  const owners = new Map<string, string>();
  const claim = (what: string, name: string, plugin: string) => {
    const key = `${what} ${name}`;
    const owner = owners.get(key);
    if (owner === undefined) owners.set(key, plugin);
    else issues.push({ plugin, message: `provides ${what} ${name}, which plugin ${owner} provides already` });
  };
  // Its real path: a plugin reached through a symlinked workspace is inside it all the same.
  const workspace = o.workspaceDir ? await realpath(o.workspaceDir).catch(() => resolve(o.workspaceDir!)) : null;
  for (const entry of o.entries) {
    const located = await locatePlugin(entry.spec, entry.from ?? o.baseDir);
    if (!located.ok) {
      issues.push({ plugin: entry.spec, message: located.error });
      continue;
    }
    if (workspace && isInside(workspace, located.value)) {
      issues.push({ plugin: entry.spec, message: "is inside NAHIDA_WORKSPACE_DIR; plugins are never loaded from the agent's workspace" });
      continue;
    }
    const manifest = await readManifest(located.value);
    if (!manifest.ok) {
      issues.push({ plugin: entry.spec, message: manifest.error });
      continue;
    }
    const m = manifest.value;
    const refusals = [rangeRefusal("nahida", m.nahida, o.hostVersion), rangeRefusal("sdk", m.sdk, SDK_VERSION)].filter((r) => r !== null);
    for (const message of refusals) issues.push({ plugin: m.id, message });
    const twin = found.find((f) => f.manifest.id === m.id);
    if (twin) {
      issues.push({ plugin: m.id, message: `is listed twice (${twin.entry.spec} and ${entry.spec})` });
      continue;
    }
    for (const tool of m.provides.tools) claim("tool", tool, m.id);
    for (const command of m.provides.commands) claim("command", `/${command}`, m.id);
    for (const channel of m.provides.channels) claim("channel kind", channel.kind, m.id);
    found.push({ entry, dir: located.value, manifest: m });
  }
  return issues.length > 0 ? err(issues) : ok(found);
}

/** A plugin's config variable for one key of its config schema. */
const configVariable = (found: Found, key: string) => (found.entry.envPrefix ?? pluginEnvPrefix(found.manifest.id)) + key.toUpperCase();

/** The plugin's config from its variables, parsed by its schema; each bad variable is an issue. */
function readConfig(found: Found, plugin: NahidaPlugin, env: LoadPluginsOptions["env"]): Result<unknown, PluginIssue[]> {
  const { manifest } = found;
  const schema = plugin.config;
  const declared = manifest.config;
  if (!schema) {
    return declared === undefined ? ok(undefined) : err([{ plugin: manifest.id, message: "plugin.yaml declares a config, but the code has no config schema" }]);
  }
  // Duck-typed: a plugin installed with its own copy of zod has other classes.
  const shape = (schema as { shape?: unknown }).shape;
  if (typeof shape !== "object" || shape === null) return err([{ plugin: manifest.id, message: "the config schema must be a z.object({...}) of its variables" }]);
  if (!isDeepStrictEqual(declared, configJsonSchema(schema))) {
    return err([{ plugin: manifest.id, message: "plugin.yaml's config is not the JSON Schema of the code's config schema; print the right one with: nahida plugins schema <dir>" }]);
  }
  const variable = (key: string) => configVariable(found, key);
  const values = Object.fromEntries(Object.keys(shape).flatMap((key) => (env[variable(key)] !== undefined ? [[key, env[variable(key)]]] : [])));
  const parsed = schema.safeParse(values);
  if (parsed.success) return ok(parsed.data);
  return err(parsed.error.issues.map((i) => ({ plugin: manifest.id, ...(i.path.length > 0 ? { variable: variable(String(i.path[0])) } : {}), message: i.message })));
}

/** The network hosts a plugin may reach: its declared hosts, and the hosts of the URLs in the config keys it names. */
function networkHosts(manifest: PluginManifest, config: unknown): Result<string[], string> {
  const hosts: string[] = [];
  for (const entry of manifest.permissions.network) {
    if (!entry.startsWith("config:")) {
      hosts.push(entry);
      continue;
    }
    const key = entry.slice("config:".length);
    const value = (config as Record<string, unknown> | undefined)?.[key];
    if (value === undefined) continue;
    try {
      hosts.push(new URL(String(value)).hostname.replace(/^\[|\]$/g, ""));
    } catch {
      return err(`permissions.network names config:${key}, whose value is not a URL`);
    }
  }
  return ok(hosts);
}

/** Imports one plugin and runs its `register`; what it registers must be what its manifest provides. */
async function registerPlugin(found: Found, o: LoadPluginsOptions, bindings: PluginBindings): Promise<Result<LoadedPlugin, PluginIssue[]>> {
  const { manifest, dir } = found;
  const id = manifest.id;
  const refuse = (message: string) => err([{ plugin: id, message }]);
  let module: unknown;
  try {
    const url = pathToFileURL(join(dir, manifest.entry)).href;
    module = await (found.entry.load ?? (() => (o.importModule ?? ((u) => import(u)))(url)))();
  } catch (error) {
    return refuse(`its entry ${manifest.entry} failed to load: ${(error as Error).message.split("\n")[0]}`);
  }
  const plugin = (module as { default?: unknown }).default;
  if (!isNahidaPlugin(plugin)) return refuse(`its entry ${manifest.entry} has no default export made by definePlugin(...)`);
  if (plugin.id !== id) return refuse(`its code says id ${JSON.stringify(plugin.id)}, its plugin.yaml ${JSON.stringify(id)}`);
  const config = readConfig(found, plugin, o.env);
  if (!config.ok) return config;
  const hosts = networkHosts(manifest, config.value);
  if (!hosts.ok) return refuse(hosts.error);

  const configVariables = Object.keys((plugin.config as { shape?: object } | undefined)?.shape ?? {}).map((key) => configVariable(found, key));
  const loaded: LoadedPlugin = { manifest, dir, bundled: found.entry.bundled, configVariables, tools: [], commands: [], channels: [] };
  const problems: string[] = [];
  const permission = (name: string, granted: boolean, what: string) => {
    if (!granted) throw new PluginPermissionError(id, name, `plugin ${id} uses ${what} without permissions.${name} in its plugin.yaml`);
  };
  const provides = manifest.provides;
  const fetch = guardedFetch(id, hosts.value);
  const workspace = o.workspaceDir ? pluginWorkspace(o.workspaceDir) : null;
  const api: PluginApi<unknown> = {
    id,
    config: config.value,
    logger: bindings.logger(id),
    clock: o.clock ?? systemClock,
    host: { version: o.hostVersion, timeZone: o.timeZone, toolNames: () => bindings.toolNames() },
    get fetch() {
      permission("network", manifest.permissions.network.length > 0, "api.fetch");
      return fetch;
    },
    get workspace() {
      permission("workspace", manifest.permissions.workspace !== "none", "api.workspace");
      return workspace;
    },
    get ledger() {
      permission("ledger", manifest.permissions.ledger === "read", "api.ledger");
      return bindings.ledger;
    },
    tool(definition: ToolDefinition) {
      if (!provides.tools.includes(definition.name)) problems.push(`registers tool ${definition.name}, which its plugin.yaml does not provide`);
      else if (loaded.tools.some((t) => t.name === definition.name)) problems.push(`registers tool ${definition.name} twice`);
      else loaded.tools.push(guardTool(manifest, definition, () => bindings.ledger));
    },
    command(definition: CommandDefinition<CommandContext>) {
      if (!provides.commands.includes(definition.name)) problems.push(`registers command /${definition.name}, which its plugin.yaml does not provide`);
      else if (loaded.commands.some((c) => c.name === definition.name)) problems.push(`registers command /${definition.name} twice`);
      else loaded.commands.push(guardCommand(manifest, definition));
    },
    channel(channel: ChannelModule) {
      if (!provides.channels.some((c) => c.kind === channel.kind)) problems.push(`registers channel kind ${channel.kind}, which its plugin.yaml does not provide`);
      else if (loaded.channels.some((c) => c.kind === channel.kind)) problems.push(`registers channel kind ${channel.kind} twice`);
      else loaded.channels.push(channel);
    },
  };
  try {
    await plugin.register(api);
  } catch (error) {
    problems.push(error instanceof PluginPermissionError ? error.message.replace(`plugin ${id} `, "") : `register failed: ${(error as Error).message.split("\n")[0]}`);
  }
  return problems.length > 0 ? err(problems.map((message) => ({ plugin: id, message }))) : ok(loaded);
}

/** Names across every plugin's tools, aliases included, must be unique: a second one is an issue. */
function toolNameClashes(plugins: readonly LoadedPlugin[]): PluginIssue[] {
  const owner = new Map<string, string>();
  const issues: PluginIssue[] = [];
  for (const plugin of plugins) {
    for (const tool of plugin.tools) {
      for (const name of [tool.name, ...(tool.aliases ?? [])]) {
        const other = owner.get(name);
        if (other !== undefined) issues.push({ plugin: plugin.manifest.id, message: `tool name ${name} is taken by ${other === plugin.manifest.id ? "another of its tools" : `plugin ${other}`}` });
        owner.set(name, plugin.manifest.id);
      }
    }
  }
  return issues;
}

/**
 * Loads the deployment's plugins: every manifest is read and checked before any plugin
 * code runs (a refusal there stops everything, with every reason); then each entry is
 * imported and registered. The result is all of them or, with the reasons, none.
 */
export async function loadPlugins(o: LoadPluginsOptions): Promise<Result<LoadedPlugins, PluginIssue[]>> {
  const checked = await checkManifests(o);
  if (!checked.ok) return checked;
  const bindings = new LoadedPluginBindings();
  const loaded: LoadedPlugin[] = [];
  const issues: PluginIssue[] = [];
  for (const found of checked.value) {
    const registered = await registerPlugin(found, o, bindings);
    if (registered.ok) loaded.push(registered.value);
    else issues.push(...registered.error);
  }
  issues.push(...toolNameClashes(loaded));
  if (issues.length > 0) return err(issues);
  const plugins = new LoadedPlugins(loaded, bindings);
  bindings.names = () => plugins.tools().map((tool) => tool.name);
  return ok(plugins);
}
