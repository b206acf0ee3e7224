import { z } from "zod";
import { defineTool, type PluginWorkspace } from "@nahida/plugin-sdk";

const MAX_BYTES = 64 * 1024;

/** Reads a text file from the workspace; paths outside it (.., absolute, symlinks) are refused. */
export function workspaceReadTool(options: { workspace: PluginWorkspace }) {
  return defineTool({
    name: "workspace_read",
    description: "Read a text file from the bot's workspace directory (relative path, at most 64 KiB).",
    parameters: z.object({ path: z.string().min(1).max(1024).describe("path relative to the workspace, e.g. notes/todo.md") }),
    async execute({ path }) {
      return { path, content: await options.workspace.readText(path, MAX_BYTES) };
    },
  });
}
