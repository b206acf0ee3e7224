import { build } from "esbuild";
import { BROWSER_BUILD_OPTIONS, oncePerEntry } from "./browser-assets";

/**
 * Bundles a browser entry (TypeScript, with what it imports from the workspace) into one
 * minified ES module, in memory, the first time it is asked for. This is the sources'
 * version; the build replaces it with browser-bundle.built.ts, which reads what
 * `npm run build` bundled ahead.
 */
export const browserBundle = oncePerEntry(async (entry) => {
  const result = await build({ ...BROWSER_BUILD_OPTIONS, entryPoints: [entry], write: false });
  return { code: result.outputFiles[0]!.text, etag: `"${result.outputFiles[0]!.hash}"` };
});
