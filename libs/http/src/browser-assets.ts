import { join, relative } from "node:path";
import type { BuildOptions } from "esbuild";

/** A script for browsers: built once, served as it is. */
export interface BrowserBundle {
  /** ES module source, minified. */
  code: string;
  /** For `ETag`: changes whenever the code does. */
  etag: string;
}

/** How a browser entry is bundled: here on first use, and by `npm run build` ahead of time. */
export const BROWSER_BUILD_OPTIONS = {
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  legalComments: "none",
  logLevel: "silent",
} satisfies BuildOptions;

/**
 * Where `npm run build` puts an entry's bundle: `dist/browser/` plus the entry's path from
 * the repository root, `.js` for `.ts`. Entries are the `*.app.ts` files of `browser/` folders.
 */
export const builtBrowserScript = (root: string, entry: string) => join(root, "dist", "browser", relative(root, entry).replace(/\.ts$/, ".js"));

/**
 * `make` once per entry: the gateway serves the same bytes for its whole life. A failure is
 * forgotten, so the next request tries again.
 */
export function oncePerEntry(make: (entry: string) => Promise<BrowserBundle>): (entry: string) => Promise<BrowserBundle> {
  const bundles = new Map<string, Promise<BrowserBundle>>();
  return (entry) => {
    let bundle = bundles.get(entry);
    if (!bundle) {
      bundle = make(entry);
      bundles.set(entry, bundle);
      bundle.catch(() => bundles.delete(entry));
    }
    return bundle;
  };
}
