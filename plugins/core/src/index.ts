import { z } from "zod";
import { definePlugin } from "@nahida/plugin-sdk";
import { builtinCommands } from "./commands/builtin.commands";
import { cronTools } from "./tools/cron.tools";
import { currentTimeTool } from "./tools/current-time.tool";
import { sessionTools } from "./tools/session.tools";
import { subagentTools } from "./tools/subagent.tools";
import { workspaceReadTool } from "./tools/workspace-read.tool";

/**
 * The core plugin's settings. The host reads them under `AGENT_` (their names from before
 * the built-ins were a plugin) instead of `PLUGIN_CORE_`. The loop guard (AGENT_EVENT_MAX_DEPTH)
 * is the host's: it holds for every plugin's events.
 */
export const CoreConfig = z.object({
  cron_scope: z.enum(["chat", "all"]).default("chat").describe("which cron jobs the cron tools reach: chat (the current chat's) or all"),
  session_visibility: z.enum(["self", "tree", "all"]).default("tree").describe("which sessions the session tools see and send to: self, tree (own and children) or all"),
});

/** The built-in tools and commands, registered through the same API as any plugin's. */
export default definePlugin({
  id: "core",
  config: CoreConfig,
  register(api) {
    const { ledger, config } = api;
    api.tool(currentTimeTool({ defaultTimeZone: api.host.timeZone, now: () => api.clock.now() }));
    if (api.workspace) api.tool(workspaceReadTool({ workspace: api.workspace }));
    for (const tool of cronTools({ cron: ledger.cron, scope: config.cron_scope })) api.tool(tool);
    const sessions = sessionTools({
      events: ledger.events,
      sessions: ledger.sessions,
      policies: ledger.policies,
      runs: ledger.runs,
      turns: ledger.turns,
      compactions: ledger.compactions,
      visibility: config.session_visibility,
    });
    for (const tool of sessions) api.tool(tool);
    for (const tool of subagentTools({ tasks: ledger.tasks, toolNames: () => api.host.toolNames() })) api.tool(tool);
    for (const command of builtinCommands) api.command(command);
  },
});
