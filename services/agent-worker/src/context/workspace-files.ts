import { readFile } from "node:fs/promises";
import { join } from "node:path";

/** Files whose contents join the system prompt when present, in this order. */
export const WORKSPACE_PROMPT_FILES = ["AGENTS.md", "SOUL.md", "USER.md"] as const;
const MAX_FILE_CHARS = 32_000;

export type PromptFile = { name: string; content: string };

/**
 * Reads the prompt files present in the workspace; a missing directory or file is skipped.
 * Results are reused for `cacheMs`, so a busy worker does not reopen three files per run
 * while an edited file still shows up within seconds.
 */
export function createWorkspacePromptReader(options: { cacheMs: number; now?: () => number } = { cacheMs: 5_000 }) {
  const now = options.now ?? Date.now;
  const cache = new Map<string, { at: number; files: Promise<PromptFile[]> }>();
  return (workspaceDir: string | undefined): Promise<PromptFile[]> => {
    if (!workspaceDir) return Promise.resolve([]);
    const hit = cache.get(workspaceDir);
    if (hit && now() - hit.at < options.cacheMs) return hit.files;
    const files = readWorkspacePromptFiles(workspaceDir);
    cache.set(workspaceDir, { at: now(), files });
    return files;
  };
}

async function readWorkspacePromptFiles(workspaceDir: string): Promise<PromptFile[]> {
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
