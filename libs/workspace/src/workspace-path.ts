import { realpath, stat } from "node:fs/promises";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { err, ok, type Result } from "@nahida/contracts";

export interface WorkspacePathError {
  code: "bad_request" | "not_found";
  message: string;
}

/** Whether `candidate` is `root` or lies under it (both absolute, already resolved). */
export function isInside(root: string, candidate: string): boolean {
  const rel = relative(root, candidate);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/**
 * Resolves a path given by a user, the model or an API caller to a real file inside the
 * workspace. Rejected: absolute paths, `..` segments, NUL bytes, anything whose real path
 * (after following symlinks) lies outside the workspace's real path, and anything that is
 * not a regular file (a directory, a device, a FIFO: reading one fails late or never ends).
 */
export async function resolveWorkspacePath(workspaceDir: string, requested: string): Promise<Result<string, WorkspacePathError>> {
  if (typeof requested !== "string" || requested.length === 0 || requested.length > 4096) {
    return err({ code: "bad_request", message: "path must be a non-empty relative path inside the workspace" });
  }
  if (requested.includes("\0")) return err({ code: "bad_request", message: "path contains a NUL byte" });
  if (isAbsolute(requested) || /^[a-zA-Z]:[\\/]/.test(requested)) {
    return err({ code: "bad_request", message: `path ${JSON.stringify(requested)} is absolute; give a path relative to the workspace` });
  }
  if (requested.split(/[\\/]/).includes("..")) {
    return err({ code: "bad_request", message: `path ${JSON.stringify(requested)} contains '..'` });
  }
  let root: string;
  try {
    root = await realpath(workspaceDir);
  } catch {
    return err({ code: "not_found", message: "the workspace directory does not exist" });
  }
  const lexical = resolve(root, requested);
  if (!isInside(root, lexical)) return err({ code: "bad_request", message: `path ${JSON.stringify(requested)} leaves the workspace` });
  let real: string;
  try {
    real = await realpath(lexical);
  } catch {
    return err({ code: "not_found", message: `no file ${JSON.stringify(requested)} in the workspace` });
  }
  if (!isInside(root, real)) {
    return err({ code: "bad_request", message: `path ${JSON.stringify(requested)} points outside the workspace (symlink)` });
  }
  const info = await stat(real).catch(() => null);
  if (!info) return err({ code: "not_found", message: `no file ${JSON.stringify(requested)} in the workspace` });
  if (!info.isFile()) {
    return err({ code: "bad_request", message: `path ${JSON.stringify(requested)} is ${info.isDirectory() ? "a directory" : "not a regular file"}; attach a file` });
  }
  return ok(real);
}
