import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { createServer, type AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { TEST_POSTGRES_URL, TEST_REDIS_URL, clearQueuePrefix, dropDatabase, testQueuePrefix, uniqueName, waitFor } from "../support/infra";
import { freePort } from "../support/ports";
import { REPO_ROOT, spawnTsProcess } from "../support/processes";

const MAIN = "services/launcher/src/main.ts";

/** Runs the launcher to completion and returns its exit code and output. */
function runToExit(env: Record<string, string>, timeoutMs = 30_000): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", MAIN], { cwd: REPO_ROOT, env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`launcher did not exit:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, stdout });
    });
  });
}

describe("launcher", () => {
  const databases: string[] = [];
  const prefixes: string[] = [];
  afterAll(async () => {
    for (const url of databases) await dropDatabase(url);
    for (const prefix of prefixes) await clearQueuePrefix(TEST_REDIS_URL, prefix);
  });

  function freshDatabaseUrl(): string {
    const url = new URL(TEST_POSTGRES_URL);
    url.pathname = `/nahida_t_${uniqueName("launcher")}`;
    databases.push(url.toString());
    return url.toString();
  }

  it("creates and migrates an empty database, answers /api/ready, and exits 0 on SIGTERM", async () => {
    const port = await freePort();
    const prefix = testQueuePrefix("launcher");
    prefixes.push(prefix);
    const started = Date.now();
    const proc = await spawnTsProcess(
      MAIN,
      {
        DATABASE_URL: freshDatabaseUrl(),
        REDIS_URL: TEST_REDIS_URL,
        NAHIDA_QUEUE_PREFIX: prefix,
        GATEWAY_PORT: String(port),
        LOG_LEVEL: "info",
      },
      { readyText: "nahida started", timeoutMs: 60_000 },
    );
    try {
      const health = await fetch(`http://127.0.0.1:${port}/api/health`);
      expect(health.status).toBe(200);
      const ready = await waitFor(
        async () => {
          const res = await fetch(`http://127.0.0.1:${port}/api/ready`);
          return res.status === 200 ? res.json() : undefined;
        },
        60_000,
        "/api/ready",
      );
      expect(ready).toEqual({ status: "ready", checks: { postgres: "ok", redis: "ok" } });
      expect(Date.now() - started).toBeLessThan(60_000);
      // Logs are structured JSON lines.
      const firstLine = proc.output().split("\n").find((l) => l.startsWith("{"));
      expect(JSON.parse(firstLine!)).toMatchObject({ level: expect.any(Number), msg: expect.any(String) });
    } finally {
      proc.kill("SIGTERM");
    }
    expect(await proc.exited).toBe(0);
  });

  it("drains and exits 0 through npm start on SIGTERM, leaving no process behind", async () => {
    const port = await freePort();
    const prefix = testQueuePrefix("launcher_npm");
    prefixes.push(prefix);
    // npm forwards SIGTERM only to its own child; the script must run node in the shell's place.
    const npm = spawn("npm", ["start"], {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        NAHIDA_SERVICES: "gateway",
        DATABASE_URL: freshDatabaseUrl(),
        REDIS_URL: TEST_REDIS_URL,
        NAHIDA_QUEUE_PREFIX: prefix,
        GATEWAY_PORT: String(port),
        LOG_LEVEL: "info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    npm.stdout.on("data", (d) => (output += d));
    npm.stderr.on("data", (d) => (output += d));
    const exited = new Promise<number | string>((resolve) => npm.on("exit", (code, signal) => resolve(code ?? signal ?? "unknown")));
    /** The first complete JSON log line with this `msg`; npm's own banner lines are not JSON. */
    const logLine = (msg: string): { msg: string; pid: number } | undefined => {
      for (const line of output.split("\n").slice(0, -1)) {
        if (!line.startsWith("{")) continue;
        const entry = JSON.parse(line) as { msg?: string; pid?: number };
        if (entry.msg === msg && typeof entry.pid === "number") return { msg, pid: entry.pid };
      }
      return undefined;
    };
    let servicePid: number | undefined;
    try {
      const started = await waitFor(async () => logLine("nahida started"), 60_000, "npm start to log 'nahida started'");
      servicePid = started.pid;
      expect(servicePid).not.toBe(npm.pid);
      const ready = await waitFor(async () => {
        const res = await fetch(`http://127.0.0.1:${port}/api/ready`);
        return res.status === 200 ? res.json() : undefined;
      }, 30_000, "/api/ready");
      expect(ready).toMatchObject({ status: "ready" });

      npm.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect(logLine("stopped")).toBeDefined();
      expect(() => process.kill(servicePid!, 0)).toThrow(expect.objectContaining({ code: "ESRCH" }));
    } finally {
      npm.kill("SIGKILL");
      if (servicePid !== undefined) {
        try {
          process.kill(servicePid, "SIGKILL");
        } catch {
          // Already gone, as it should be.
        }
      }
    }
  }, 90_000);

  it("exits 0 and leaves no build behind when SIGTERM comes while npm start is still building", async () => {
    const npm = spawn("npm", ["start"], { cwd: REPO_ROOT, env: { ...process.env, NAHIDA_SERVICES: "gateway", REDIS_URL: TEST_REDIS_URL }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    npm.stdout.on("data", (d) => (output += d));
    npm.stderr.on("data", (d) => (output += d));
    const exited = new Promise<number | string>((resolve) => npm.on("exit", (code, signal) => resolve(code ?? signal ?? "unknown")));
    try {
      await waitFor(async () => output.includes("building dist/") || undefined, 30_000, "npm start to begin building");
      // npm → the start script (exec'd in its shell's place) → the build.
      const processes = (await promisify(execFile)("ps", ["-eo", "pid=,ppid=,args="])).stdout.split("\n").map((l) => l.trim().split(/\s+/));
      const start = processes.find(([, ppid]) => ppid === String(npm.pid))?.[0];
      const build = await waitFor(async () => {
        const rows = (await promisify(execFile)("ps", ["-eo", "pid=,ppid=,args="])).stdout.split("\n").map((l) => l.trim().split(/\s+/));
        return rows.find(([, ppid, ...args]) => ppid === start && args.join(" ").includes("scripts/build.ts"))?.[0];
      }, 10_000, "the build process");
      npm.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect(output).not.toContain("nahida started");
      await waitFor(async () => {
        try {
          process.kill(Number(build), 0);
          return undefined;
        } catch {
          return true;
        }
      }, 5_000, "the build to be gone");
    } finally {
      npm.kill("SIGKILL");
    }
  }, 60_000);

  it.each([
    [{ REDIS_URL: "nonsense" }, "REDIS_URL: must be a URL like redis://"],
    [{ DATABASE_URL: "mysql://x@y/z" }, "DATABASE_URL: must be a URL like postgresql://"],
    [{ GATEWAY_PORT: "99999" }, "GATEWAY_PORT"],
    [{ NAHIDA_SERVICES: "gateway,teleport" }, "NAHIDA_SERVICES: unknown service teleport"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL"],
  ])("rejects bad configuration %j with one clear message", async (env, message) => {
    const result = await runToExit(env);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(message);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it("exits 0, not by the signal, when SIGTERM comes while it is still starting", async () => {
    // A Redis that accepts and never answers holds the start in its Redis check; the
    // connection is the marker that the start is under way.
    let connected = false;
    const silent = createServer(() => void (connected = true));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: freshDatabaseUrl(), REDIS_URL: `redis://127.0.0.1:${port}`, NAHIDA_SERVICES: "gateway", GATEWAY_PORT: String(await freePort()), NAHIDA_SHUTDOWN_TIMEOUT_MS: "1000" },
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
    try {
      await waitFor(async () => connected, 30_000, "the launcher's Redis check");
      child.kill("SIGTERM");
      expect(await exited, output).toEqual({ code: 0, signal: null });
      expect(output).toContain("stopping while starting");
    } finally {
      child.kill("SIGKILL");
      silent.close();
    }
  });

  it("reports every bad variable at once", async () => {
    const result = await runToExit({ REDIS_URL: "nonsense", GATEWAY_PORT: "http", LOG_LEVEL: "loud" });
    expect(result.code).toBe(1);
    for (const name of ["REDIS_URL", "GATEWAY_PORT", "LOG_LEVEL"]) expect(result.stderr).toContain(name);
  });

  it("reports bad channel instances and their prefixed variables, one line each", async () => {
    const result = await runToExit({
      NAHIDA_CHANNELS: "telegram,support:telegram,Bad,qq:milkyway",
      TELEGRAM_BOT_TOKEN: "7000000001:main-token",
      GATEWAY_PORT: "http",
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("  GATEWAY_PORT: ");
    expect(result.stderr).toContain('  NAHIDA_CHANNELS: channel name "Bad" must match [a-z][a-z0-9_-]*\n');
    expect(result.stderr).toContain('  NAHIDA_CHANNELS: unknown kind "milkyway" of channel qq; known: telegram, milky, web\n');
    expect(result.stderr).toContain("  SUPPORT_BOT_TOKEN: is required for channel support in NAHIDA_CHANNELS");
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it("names DATABASE_URL when Postgres is unreachable, REDIS_URL when Redis is, REDIS_SENTINELS when no sentinel answers and REDIS_CLUSTER_NODES when no node does", async () => {
    const port = await freePort();
    const db = await runToExit({ DATABASE_URL: `postgresql://postgres@127.0.0.1:${port}/nahida` });
    expect(db.code).toBe(1);
    expect(db.stderr).toMatch(/^nahida: DATABASE_URL: cannot use Postgres at 127\.0\.0\.1:\d+: .*ECONNREFUSED/m);
    expect(db.stderr).not.toMatch(/\n\s+at /);

    const redis = await runToExit({ DATABASE_URL: freshDatabaseUrl(), REDIS_URL: `redis://127.0.0.1:${port}` });
    expect(redis.code).toBe(1);
    expect(redis.stderr).toMatch(/^nahida: REDIS_URL: cannot reach Redis at 127\.0\.0\.1:\d+: .*ECONNREFUSED/m);

    // An empty REDIS_URL counts as unset, whatever this shell exports.
    const sentinel = await runToExit({ DATABASE_URL: freshDatabaseUrl(), REDIS_URL: "", REDIS_SENTINELS: `127.0.0.1:${port}` });
    expect(sentinel.code).toBe(1);
    expect(sentinel.stderr).toMatch(/^nahida: REDIS_SENTINELS: cannot reach Redis at master mymaster of sentinels 127\.0\.0\.1:\d+: .*sentinel/m);

    const cluster = await runToExit({ DATABASE_URL: freshDatabaseUrl(), REDIS_URL: "", REDIS_CLUSTER_NODES: `127.0.0.1:${port}` });
    expect(cluster.code).toBe(1);
    expect(cluster.stderr).toMatch(/^nahida: REDIS_CLUSTER_NODES: cannot reach Redis at cluster nodes 127\.0\.0\.1:\d+: Failed to refresh slots cache/m);
  });
});
