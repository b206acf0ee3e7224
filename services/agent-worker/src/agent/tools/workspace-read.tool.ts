import { readFile, stat } from "node:fs/promises";
import { z } from "zod";
import { resolveWorkspacePath } from "@nahida/workspace";
import { defineTool } from "../tool-registry";

const MAX_BYTES = 64 * 1024;

/** Reads a text file from the workspace; paths outside it (.., absolute, symlinks) are refused. */
export function workspaceReadTool(options: { workspaceDir: string }) {
  return defineTool({
    name: "workspace_read",
    description: "Read a text file from the bot's workspace directory (relative path, at most 64 KiB).",
    parameters: z.object({ path: z.string().min(1).max(1024).describe("path relative to the workspace, e.g. notes/todo.md") }),
    async execute({ path }) {
      const resolved = await resolveWorkspacePath(options.workspaceDir, path);
      if (!resolved.ok) throw new Error(resolved.error.message);
      const info = await stat(resolved.value);
      if (!info.isFile()) throw new Error(`${path} is not a file`);
      if (info.size > MAX_BYTES) throw new Error(`${path} is ${info.size} bytes; the limit is ${MAX_BYTES}`);
      return { path, content: await readFile(resolved.value, "utf8") };
    },
  });
}
