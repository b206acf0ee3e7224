import { execFile } from "node:child_process";
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "../gateway/api-client";
import { TEST_REDIS_URL, clearQueuePrefix, createTestDatabase, testQueuePrefix, waitFor, type TestDatabase } from "../support/infra";
import { freePort } from "../support/ports";
import { REPO_ROOT } from "../support/processes";

// What the image's runtime stage holds, without an engine: the files deploy/Dockerfile
// copies, its own `npm ci` (production dependencies only), and dist/ from the build. The
// Dockerfile is read, not copied here, so the two cannot drift apart.

const run = promisify(execFile);
const ADMIN_TOKEN = "production-install-admin-token-0123456789";

/** The runtime stage (after the last FROM): its COPY sources and its `npm ci` arguments. */
async function runtimeStage(): Promise<{ copies: string[]; npmCi: string[] }> {
  const dockerfile = (await readFile(join(REPO_ROOT, "deploy/Dockerfile"), "utf8")).replace(/\\\n/g, " ");
  const stage = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
  const copies = [...stage.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.trim().split(/\s+/));
  const npmCi = /RUN npm ci ([^&]+)/.exec(stage)?.[1]?.trim().split(/\s+/);
  if (!npmCi || copies.length === 0) throw new Error("deploy/Dockerfile's runtime stage has no COPY or npm ci");
  return { copies, npmCi };
}

describe("the image's runtime stage: production dependencies only, beside dist/", () => {
  let dir: string;
  let t: TestDatabase;
  let prefix: string;

  beforeAll(async () => {
    await run(process.execPath, ["--import", "tsx", "scripts/build.ts"], { cwd: REPO_ROOT });
    dir = await mkdtemp(join(tmpdir(), "nahida-image-"));
    const { copies, npmCi } = await runtimeStage();
    const filter = (src: string) => !src.includes("/node_modules") && !src.endsWith("/src/generated");
    for (const path of [...copies, "dist", "examples/plugins"]) await cp(join(REPO_ROOT, path), join(dir, path), { recursive: true, filter });
    // The packages come from npm's cache, filled by the install that ran the suite.
    await run("npm", ["ci", ...npmCi, "--prefer-offline"], { cwd: dir, maxBuffer: 16 * 1024 * 1024 });
    t = await createTestDatabase("image");
    prefix = testQueuePrefix("image");
  }, 240_000);
  afterAll(async () => {
    await clearQueuePrefix(TEST_REDIS_URL, prefix);
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("starts every role traced, loads a TypeScript plugin, serves the pages, and drains on SIGTERM", async () => {
    const port = await freePort();
    const child = execFile(process.execPath, ["--enable-source-maps", "dist/nahida.js"], {
      cwd: dir,
      env: {
        PATH: process.env.PATH,
        NODE_ENV: "production",
        DATABASE_URL: t.url,
        REDIS_URL: TEST_REDIS_URL,
        NAHIDA_QUEUE_PREFIX: prefix,
        NAHIDA_SERVICES: "gateway,scheduler,agent-worker,delivery",
        GATEWAY_PORT: String(port),
        NAHIDA_API_TOKEN: ADMIN_TOKEN,
        WEB_SECRET: "image-test-web-secret-0123456789abcdef",
        NAHIDA_PLUGINS: "./examples/plugins/weather",
        PLUGIN_WEATHER_DEFAULT_CITY: "Berlin",
        OTEL_TRACES_EXPORTER: "otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9",
        LOG_LEVEL: "info",
      },
    });
    let output = "";
    child.stdout!.on("data", (d) => (output += d));
    child.stderr!.on("data", (d) => (output += d));
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    try {
      await waitFor(async () => output.includes('"msg":"nahida started"') || undefined, 60_000, `the built process to start:\n${output}`);
      expect(output).toContain('"tracing":true');
      const api = apiClient(`http://127.0.0.1:${port}`, ADMIN_TOKEN);
      expect((await api("GET", "/api/plugins")).body.plugins.map((p: { id: string }) => p.id)).toEqual(["core", "telegram", "milky", "web", "weather"]);
      expect((await api("GET", "/api/ready")).status).toBe(200);
      for (const asset of ["/console/app.js", "/chat/app.js", "/chat/embed.js"]) expect((await fetch(`http://127.0.0.1:${port}${asset}`)).status, asset).toBe(200);
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
  });
});
