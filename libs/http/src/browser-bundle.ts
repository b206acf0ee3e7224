import { build } from "esbuild";

/** A script for browsers: built once, served as it is. */
export interface BrowserBundle {
  /** ES module source, minified. */
  code: string;
  /** For `ETag`: changes whenever the code does. */
  etag: string;
}

const bundles = new Map<string, Promise<BrowserBundle>>();

/**
 * Bundles a browser entry (TypeScript, with what it imports from the workspace) into one
 * minified ES module, in memory, the first time it is asked for: the gateway serves the
 * same bytes for its whole life and nothing needs a build step before `npm start`.
 */
export function browserBundle(entry: string): Promise<BrowserBundle> {
  let bundle = bundles.get(entry);
  if (!bundle) {
    bundle = build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      format: "esm",
      platform: "browser",
      target: "es2022",
      minify: true,
      legalComments: "none",
      logLevel: "silent",
    }).then((result) => {
      const code = result.outputFiles[0]!.text;
      return { code, etag: `"${result.outputFiles[0]!.hash}"` };
    });
    bundles.set(entry, bundle);
    bundle.catch(() => bundles.delete(entry));
  }
  return bundle;
}
