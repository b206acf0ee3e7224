// `npm run build`: the launcher, the migration command and the CLI as JavaScript in dist/,
// and the browser pages' scripts in dist/browser/, so production runs `node dist/nahida.js`
// with no TypeScript loader and no bundler.
//
// esbuild bundles the workspace's own packages (their sources are TypeScript, imported
// without extensions, which Node cannot run) and leaves every npm dependency external: they
// load from node_modules as usual, so OpenTelemetry's hooks still see pg, ioredis and http
// being imported. Code splitting keeps each dynamic import() a real one: main.ts registers
// the tracing hooks before the module that imports those libraries is loaded.
import { existsSync, realpathSync } from "node:fs";
import { isBuiltin } from "node:module";
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type OutputFile, type Plugin } from "esbuild";
import { BROWSER_BUILD_OPTIONS, builtBrowserScript } from "../libs/http/src/browser-assets";

const root = fileURLToPath(new URL("..", import.meta.url));
const outdir = resolve(root, "dist");
const WORKSPACES = ["libs", "channels", "plugins", "services"];

/** The package directory Node finds for `name` from `dir` (walking up its node_modules), or null. */
function packageDir(dir: string, name: string): string | null {
  for (let d = dir; ; d = dirname(d)) {
    const candidate = join(d, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return realpathSync(candidate);
    if (dirname(d) === d) return null;
  }
}

/**
 * Every import that is not the workspace's own (`@nahida/*`) or relative stays a runtime
 * import, which Node resolves from dist/, that is from the root's node_modules. A package
 * npm installed under a workspace's own node_modules (two versions of it in the tree) would
 * be found from the sources and not from dist/: the build refuses it instead of shipping a
 * program that fails to load it (dedupe the versions; package.json `overrides`).
 */
const dependenciesExternal: Plugin = {
  name: "dependencies-external",
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith("@nahida/")) return undefined;
      if (isBuiltin(args.path)) return { path: args.path, external: true };
      const name = args.path.split("/").slice(0, args.path.startsWith("@") ? 2 : 1).join("/");
      const fromSource = packageDir(args.resolveDir, name);
      if (fromSource !== null && fromSource !== packageDir(outdir, name)) {
        return { errors: [{ text: `${name} is installed at ${relative(root, fromSource)}, which dist/ does not see: put one version of it in the root node_modules` }] };
      }
      return { path: args.path, external: true };
    });
  },
};

/**
 * A workspace module `x.ts` with a sibling `x.built.ts` is built from the sibling: what
 * differs between the sources and the build (plugin-import.ts, browser-bundle.ts) is two small
 * modules side by side, not a flag. A module's `import.meta.url` stays the URL of its source
 * file, so what it finds beside itself (the migrations, stylesheets, its package.json) is
 * found the same way built or not; every output sits in dist/, one level below the root.
 */
const workspaceSources: Plugin = {
  name: "workspace-sources",
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes("/node_modules/")) return undefined;
      const sibling = args.path.replace(/\.ts$/, ".built.ts");
      const file = !args.path.endsWith(".built.ts") && existsSync(sibling) ? sibling : args.path;
      const source = await readFile(file, "utf8");
      const url = `new URL(${JSON.stringify(relative(root, file))}, __nahidaRoot).href`;
      return { contents: source.replaceAll("import.meta.url", url), loader: "ts", resolveDir: dirname(file) };
    });
  },
};

/** The browser pages' entries: every `*.app.ts` in a `browser/` folder of a workspace's sources. */
async function browserEntries(): Promise<string[]> {
  const entries: string[] = [];
  for (const workspace of WORKSPACES) {
    for (const file of await readdir(join(root, workspace), { recursive: true })) {
      if (!file.includes("node_modules") && /(^|\/)src\/(.+\/)?browser\/[^/]+\.app\.ts$/.test(file)) entries.push(join(root, workspace, file));
    }
  }
  return entries.sort();
}

const started = Date.now();
const [server, ...browser] = await Promise.all([
  build({
    absWorkingDir: root,
    entryPoints: {
      nahida: "services/launcher/src/main.ts",
      migrate: "services/launcher/src/migrate.cli.ts",
      cli: "services/cli/src/main.ts",
    },
    outdir,
    write: false,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20.19",
    chunkNames: "chunk-[hash]",
    sourcemap: "linked",
    banner: { js: 'const __nahidaRoot = new URL("../", import.meta.url);' },
    plugins: [dependenciesExternal, workspaceSources],
    logLevel: "warning",
  }),
  ...(await browserEntries()).map((entry) => build({ ...BROWSER_BUILD_OPTIONS, entryPoints: [entry], outfile: builtBrowserScript(root, entry), write: false })),
]);
const outputs: OutputFile[] = [server!, ...browser].flatMap((r) => r.outputFiles);

// Only files whose bytes changed are written, each through a rename, the entries last: a
// process starting from dist/ while `npm start` builds again (a replica, a test) never
// reads half a file, nor an entry whose chunks are not there yet. A previous build's files
// stay an hour, for a process started from it that imports a chunk later.
const ENTRIES = new Set(["nahida.js", "migrate.js", "cli.js"].map((name) => join(outdir, name)));
const ordered = [...outputs].sort((a, b) => Number(ENTRIES.has(a.path)) - Number(ENTRIES.has(b.path)));
let written = 0;
for (const file of ordered) {
  const old = await readFile(file.path).catch(() => null);
  if (old?.equals(file.contents)) continue;
  await mkdir(dirname(file.path), { recursive: true });
  await writeFile(`${file.path}.${process.pid}.tmp`, file.contents);
  await rename(`${file.path}.${process.pid}.tmp`, file.path);
  written++;
}
const current = new Set(outputs.map((f) => f.path));
const anHourAgo = Date.now() - 3_600_000;
for (const entry of await readdir(outdir, { recursive: true, withFileTypes: true })) {
  const path = join(entry.parentPath, entry.name);
  if (entry.isFile() && !current.has(path) && (await stat(path)).mtimeMs < anHourAgo) await rm(path, { force: true });
}

const bytes = outputs.reduce((sum, f) => sum + (f.path.endsWith(".map") ? 0 : f.contents.length), 0);
process.stdout.write(`built dist/ in ${Date.now() - started} ms: ${outputs.length} files, ${(bytes / 1024).toFixed(0)} KiB of JavaScript, ${written} changed\n`);
