import { build } from "esbuild";
import { BROWSER_BUILD_OPTIONS, type BrowserBundle } from "./browser-assets";

const bundles = new Map<string, Promise<BrowserBundle>>();

/**
 * Bundles a browser entry (TypeScript, with what it imports from the workspace) into one
 * minified ES module, in memory, the first time it is asked for: the gateway serves the
 * same bytes for its whole life. This is the sources' version; the build replaces it with
 * browser-bundle.built.ts, which reads what `npm run build` bundled ahead.
 */
export function browserBundle(entry: string): Promise<BrowserBundle> {
  let bundle = bundles.get(entry);
  if (!bundle) {
    bundle = build({ ...BROWSER_BUILD_OPTIONS, entryPoints: [entry], write: false }).then((result) => {
      const code = result.outputFiles[0]!.text;
      return { code, etag: `"${result.outputFiles[0]!.hash}"` };
    });
    bundles.set(entry, bundle);
    bundle.catch(() => bundles.delete(entry));
  }
  return bundle;
}
