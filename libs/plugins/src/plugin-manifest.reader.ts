import { readFile, realpath, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, isAbsolute, join, resolve } from "node:path";
import semver from "semver";
import { parse as parseYaml } from "yaml";
import { err, ok, type Result } from "@nahida/contracts";
import { PluginManifest } from "@nahida/plugin-sdk";
import { isInside } from "@nahida/workspace";

const MAX_MANIFEST_BYTES = 64 * 1024;

/** `./plugins/x`, `../x`, `/abs/x`: a directory; anything else names an npm package. */
const isPath = (spec: string) => spec.startsWith(".") || isAbsolute(spec);

/**
 * The real directory of a plugin named by an npm package name or a path, resolved from
 * `baseDir` (the process's working directory for NAHIDA_PLUGINS).
 */
export async function locatePlugin(spec: string, baseDir: string): Promise<Result<string, string>> {
  try {
    if (isPath(spec)) {
      const dir = await realpath(resolve(baseDir, spec));
      if (!(await stat(dir)).isDirectory()) return err(`${spec} is not a directory`);
      return ok(dir);
    }
    const require = createRequire(join(baseDir, "noop.js"));
    return ok(await realpath(dirname(require.resolve(`${spec}/package.json`))));
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ENOENT") return err(`no directory ${spec}`);
    if (code === "MODULE_NOT_FOUND") return err(`no installed package ${spec} (npm install it, or give a path starting with ./)`);
    return err(`cannot read ${spec}: ${(error as Error).message}`);
  }
}

/** The problems of a parsed manifest, as one line. */
function describeIssues(issues: readonly { path: PropertyKey[]; message: string }[]): string {
  return issues.map((i) => (i.path.length > 0 ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ");
}

/**
 * Reads and checks `<dir>/plugin.yaml` without running any of the plugin's code: the
 * schema (unknown fields refused), the version ranges' syntax, and an entry inside the
 * plugin's directory.
 */
export async function readManifest(dir: string): Promise<Result<PluginManifest, string>> {
  const path = join(dir, "plugin.yaml");
  let text: string;
  try {
    const info = await stat(path);
    if (!info.isFile()) return err("plugin.yaml is not a file");
    if (info.size > MAX_MANIFEST_BYTES) return err(`plugin.yaml is ${info.size} bytes; at most ${MAX_MANIFEST_BYTES}`);
    text = await readFile(path, "utf8");
  } catch {
    return err(`no plugin.yaml in ${dir}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text, { uniqueKeys: true, maxAliasCount: 100, prettyErrors: false });
  } catch (error) {
    return err(`plugin.yaml is not valid YAML: ${(error as Error).message.split("\n")[0]}`);
  }
  const parsed = PluginManifest.safeParse(raw);
  if (!parsed.success) return err(`plugin.yaml: ${describeIssues(parsed.error.issues)}`);
  const manifest = parsed.data;
  for (const field of ["nahida", "sdk"] as const) {
    if (semver.validRange(manifest[field]) === null) return err(`plugin.yaml: ${field}: ${JSON.stringify(manifest[field])} is not a semver range`);
  }
  if (semver.valid(manifest.version) === null) return err(`plugin.yaml: version: ${JSON.stringify(manifest.version)} is not a semver version`);
  if (!isInside(dir, resolve(dir, manifest.entry))) return err(`plugin.yaml: entry: ${manifest.entry} leaves the plugin's directory`);
  return ok(manifest);
}

/** Why `version` is outside the manifest's `range` for `what`; null when it is inside. */
export function rangeRefusal(what: "nahida" | "sdk", range: string, version: string): string | null {
  if (semver.satisfies(version, range, { includePrerelease: true })) return null;
  return what === "nahida"
    ? `requires nahida ${range}; this host is ${version}`
    : `is written for plugin API ${range}; this host's plugin API (@nahida/plugin-sdk) is ${version}`;
}
