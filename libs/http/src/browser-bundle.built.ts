import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { builtBrowserScript, oncePerEntry } from "./browser-assets";
import type { browserBundle as fromSources } from "./browser-bundle";

/** The repository root: the build keeps each module's `import.meta.url` its source's. */
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/**
 * The built host's browserBundle: the bundle `npm run build` made of the entry (in
 * dist/browser/), read once. No bundler runs in production.
 */
export const browserBundle: typeof fromSources = oncePerEntry(async (entry) => {
  const code = await readFile(builtBrowserScript(ROOT, entry), "utf8");
  return { code, etag: `"${createHash("sha256").update(code).digest("base64url").slice(0, 16)}"` };
});
