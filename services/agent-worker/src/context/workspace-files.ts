import { readFile } from "node:fs/promises";
import { join } from "node:path";

/** Files whose contents join the system prompt when present, in this order. */
export const WORKSPACE_PROMPT_FILES = ["AGENTS.md", "SOUL.md", "USER.md"] as const;
const MAX_FILE_CHARS = 32_000;

/** Reads the prompt files present in the workspace; a missing directory or file is skipped. */
export async function readWorkspacePromptFiles(workspaceDir: string | undefined): Promise<{ name: string; content: string }[]> {
  if (!workspaceDir) return [];
  const files = await Promise.all(
    WORKSPACE_PROMPT_FILES.map(async (name) => {
      try {
        const content = (await readFile(join(workspaceDir, name), "utf8")).trim();
        return content ? [{ name, content: content.slice(0, MAX_FILE_CHARS) }] : [];
      } catch {
        return [];
      }
    }),
  );
  return files.flat();
}
