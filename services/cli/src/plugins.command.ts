import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { PluginList } from "@nahida/contracts";
import type { ApiRequest } from "./api.client";
import { UsageError } from "./usage-error";

export const PLUGINS_USAGE = `  plugins list [--json]           the deployment's plugins: version, what each provides, its permissions
  plugins schema <dir>            print the config: block of a plugin's plugin.yaml, generated from its
                                  code's zod schema (runs the plugin's entry module, no server needed)`;

function listText({ plugins }: PluginList): string {
  return plugins
    .map((p) => {
      const provides = [
        ...p.provides.tools.map((t) => `tool ${t}`),
        ...p.provides.commands.map((c) => `/${c}`),
        ...p.provides.channels.map((c) => `channel ${c.kind} (${c.transports.join(", ")})`),
      ];
      const { network, workspace, send, cron, sessions, chat, ledger } = p.permissions;
      const permissions = [
        network.length ? `network ${network.join(" ")}` : "",
        workspace !== "none" ? `workspace ${workspace}` : "",
        send.length ? `send ${send.join(" ")}` : "",
        cron ? "cron" : "",
        sessions ? "sessions" : "",
        chat ? "chat" : "",
        ledger !== "none" ? `ledger ${ledger}` : "",
      ].filter(Boolean);
      return [
        `${p.id} ${p.version}${p.bundled ? " (bundled)" : ""}  ${p.name}`,
        `  provides:    ${provides.join(", ") || "nothing"}`,
        `  permissions: ${permissions.join("; ") || "none"}`,
      ].join("\n");
    })
    .join("\n");
}

/** The `config:` block for the plugin in `dir`: its entry's zod schema as JSON Schema. */
async function schemaOf(dir: string): Promise<string> {
  // Loaded only here: the plugin host is not what the rest of the CLI needs to start fast.
  const [{ stringify }, { configJsonSchema, isNahidaPlugin }, { readManifest }] = await Promise.all([import("yaml"), import("@nahida/plugin-sdk"), import("@nahida/plugins")]);
  const manifest = await readManifest(resolve(dir));
  if (!manifest.ok) throw new UsageError(manifest.error);
  const plugin = ((await import(pathToFileURL(resolve(dir, manifest.value.entry)).href)) as { default?: unknown }).default;
  if (!isNahidaPlugin(plugin)) throw new UsageError(`${manifest.value.entry} has no default export made by definePlugin(...)`);
  if (!plugin.config) return "# the plugin has no config schema: leave config: out of plugin.yaml";
  return stringify({ config: configJsonSchema(plugin.config) }).trimEnd();
}

/** `nahida plugins ...`: GET /api/plugins, and the manifest's config for plugin authors. */
export async function pluginsCommand(api: ApiRequest, [sub, ...args]: string[]): Promise<unknown> {
  if (sub === "schema") {
    const [dir, ...more] = args;
    if (!dir || more.length > 0) throw new UsageError("plugins schema needs one plugin directory");
    return schemaOf(dir);
  }
  if (sub !== "list") throw new UsageError(sub ? `unknown plugins command ${JSON.stringify(sub)}` : "plugins needs a command: list or schema");
  const { values } = parseArgs({ args, options: { json: { type: "boolean" } } });
  const list = await api<PluginList>("GET", "/api/plugins");
  return values.json ? list : listText(list);
}
