import type { ChannelModule } from "@nahida/channels";
import type { PluginView } from "@nahida/contracts";
import type { CommandContext, CommandDefinition, LedgerReader, PluginLogger, PluginManifest, ToolDefinition } from "@nahida/plugin-sdk";
import type { PluginBindings } from "./plugin-bindings";

/** One plugin after `register`: what it gave the host, already guarded by its permissions. */
export interface LoadedPlugin {
  manifest: PluginManifest;
  dir: string;
  bundled: boolean;
  /** Its config variables, one per key of its config schema (`AGENT_MAX_ITERATIONS`, `PLUGIN_WEATHER_DEFAULT_CITY`). */
  configVariables: string[];
  tools: ToolDefinition[];
  commands: CommandDefinition<CommandContext>[];
  channels: ChannelModule[];
}

/** The deployment's plugins, in load order (bundled first): the only source of tools, commands and channel kinds. */
export class LoadedPlugins {
  constructor(
    readonly plugins: readonly LoadedPlugin[],
    private readonly bindings: PluginBindings,
  ) {}

  tools(): ToolDefinition[] {
    return this.plugins.flatMap((p) => p.tools);
  }

  commands(): CommandDefinition<CommandContext>[] {
    return this.plugins.flatMap((p) => p.commands);
  }

  channels(): ChannelModule[] {
    return this.plugins.flatMap((p) => p.channels);
  }

  /** Gives the plugins the ledger and the logger; their tools and commands work from then on. */
  bind(services: { ledger: LedgerReader; logger: (plugin: string) => PluginLogger }): void {
    this.bindings.bind(services);
  }

  /** The plugins as `GET /api/plugins` shows them. */
  views(): PluginView[] {
    return this.plugins.map(({ manifest: m, bundled, tools, commands, channels }) => ({
      id: m.id,
      name: m.name,
      version: m.version,
      description: m.description ?? null,
      bundled,
      nahida: m.nahida,
      sdk: m.sdk,
      provides: {
        tools: tools.map((t) => t.name),
        commands: commands.map((c) => c.name),
        channels: m.provides.channels.filter((c) => channels.some((module) => module.kind === c.kind)),
      },
      permissions: m.permissions,
      config: m.config ?? null,
    }));
  }
}
