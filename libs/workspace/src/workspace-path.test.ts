import { execFileSync } from "node:child_process";
import { mkdtemp, mkdir, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { resolveWorkspacePath } from "./workspace-path";

describe("resolveWorkspacePath", () => {
  let root: string;
  let outside: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "nahida-ws-"));
    outside = await mkdtemp(join(tmpdir(), "nahida-out-"));
    await mkdir(join(root, "img"));
    await writeFile(join(root, "img", "chart.png"), "png");
    await writeFile(join(outside, "secret.txt"), "secret");
    await symlink(join(outside, "secret.txt"), join(root, "link.txt"));
    await symlink(join(root, "img"), join(root, "imgs"));
    execFileSync("mkfifo", [join(root, "pipe")]);
  });

  it("accepts files inside, also through symlinks that stay inside", async () => {
    expect(await resolveWorkspacePath(root, "img/chart.png")).toMatchObject({ ok: true });
    expect(await resolveWorkspacePath(root, "./img/chart.png")).toMatchObject({ ok: true });
    expect(await resolveWorkspacePath(root, "imgs/chart.png")).toMatchObject({ ok: true });
  });

  it.each([
    ["../x", "'..'"],
    ["img/../../x", "'..'"],
    ["/etc/passwd", "absolute"],
    ["link.txt", "symlink"],
    ["a\0b", "NUL"],
    ["", "non-empty"],
    // Not regular files: a directory (EISDIR at send time), a FIFO (a read that never ends).
    ["img", "is a directory"],
    ["imgs", "is a directory"],
    ["pipe", "not a regular file"],
  ])("rejects %j", async (path, reason) => {
    const result = await resolveWorkspacePath(root, path);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("bad_request");
      expect(result.error.message).toContain(reason);
    }
  });

  it("reports a missing file as not_found", async () => {
    expect(await resolveWorkspacePath(root, "nope.png")).toMatchObject({ ok: false, error: { code: "not_found" } });
  });
});
