import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { builtBrowserScript, type BrowserBundle } from "./browser-assets";
import type { browserBundle as fromSources } from "./browser-bundle";

/** The repository root: the build keeps each module's `import.meta.url` its source's. */
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const bundles = new Map<string, Promise<BrowserBundle>>();

/**
 * The built host's browserBundle: the bundle `npm run build` made of the entry (in
 * dist/browser/), read once. No bundler runs in production.
 */
export const browserBundle: typeof fromSources = (entry) => {
  let bundle = bundles.get(entry);
  if (!bundle) {
    bundle = readFile(builtBrowserScript(ROOT, entry), "utf8").then((code) => ({ code, etag: `"${createHash("sha256").update(code).digest("base64url").slice(0, 16)}"` }));
    bundles.set(entry, bundle);
    bundle.catch(() => bundles.delete(entry));
  }
  return bundle;
};
