import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { launcherVariables, readLauncherEnv } from "@nahida/launcher";
import { REPO_ROOT } from "../support/processes";

// docker-compose.yml as `docker compose` reads it, without an engine: Debian's
// docker-compose validates it and prints the file it would run (.ci/run installs it).

const COMPOSE = "/usr/bin/docker-compose";
const ROLES = { gateway: 1, "ingress-telegram": 1, "ingress-milky": 1, "agent-worker": 2, delivery: 2, scheduler: 1 };
/** Variables of docker-compose.yml itself, not of Nahida. */
const COMPOSE_ONLY = new Set(["POSTGRES_PASSWORD", "COMPOSE_PROFILES"]);

interface Service {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  restart?: string;
  depends_on?: Record<string, { condition: string }>;
  deploy?: { replicas?: number };
  profiles?: string[];
  build?: unknown;
  pull_policy?: string;
  healthcheck?: { test?: string[] };
}

describe("docker-compose.yml and .env.example", () => {
  let dir: string;
  let services: Record<string, Service>;
  let known: Set<string>;

  beforeAll(async () => {
    if (!existsSync(COMPOSE)) throw new Error(`no ${COMPOSE}: apt-get install -y docker-compose (.ci/run does)`);
    dir = await mkdtemp(join(tmpdir(), "nahida-compose-"));
    await copyFile(join(REPO_ROOT, "docker-compose.yml"), join(dir, "docker-compose.yml"));
    await copyFile(join(REPO_ROOT, ".env.example"), join(dir, ".env"));
    const { stdout } = await promisify(execFile)(COMPOSE, ["config"], { cwd: dir });
    services = (parse(stdout) as { services: Record<string, Service> }).services;
    const env = await readLauncherEnv({});
    if (!env.ok) throw new Error(JSON.stringify(env.error));
    known = launcherVariables(env.value.plugins);
  });
  afterAll(async () => dir && rm(dir, { recursive: true, force: true }));

  it("runs one service per role from the one image, each restarted, after the migration", () => {
    for (const [role, replicas] of Object.entries(ROLES)) {
      const service = services[role]!;
      expect(service.environment?.NAHIDA_SERVICES, role).toBe(role);
      expect(service.deploy?.replicas ?? 1, role).toBe(replicas);
      expect(service.restart, role).toBe("unless-stopped");
      expect(service.image, role).toBe("nahida:latest");
      expect(service.pull_policy, role).toBe("never");
      expect(Object.keys(service.environment ?? {}), role).toEqual(expect.arrayContaining(["DATABASE_URL", "REDIS_URL"]));
      // A channel's ingress runs only with its profile (COMPOSE_PROFILES), so a deployment
      // without that channel does not restart it forever.
      expect(service.profiles, role).toEqual(role.startsWith("ingress-") ? [role.slice("ingress-".length)] : undefined);
      expect(service.depends_on, role).toMatchObject({ migrate: { condition: "service_completed_successfully" }, redis: { condition: "service_healthy" } });
    }
    expect(services.migrate).toMatchObject({ command: ["node", "--enable-source-maps", "dist/migrate.js"], restart: "no", depends_on: { postgres: { condition: "service_healthy" } } });
    // The one image is built once, by the migration every role waits for.
    expect(Object.entries(services).filter(([, service]) => service.build).map(([name]) => name)).toEqual(["migrate"]);
  });

  it("keeps Redis append-only, never evicting, and health-checks both stores", () => {
    expect(services.redis!.command).toEqual(expect.arrayContaining(["--appendonly", "yes", "--maxmemory-policy", "noeviction"]));
    expect(services.redis!.healthcheck?.test).toEqual(["CMD", "redis-cli", "ping"]);
    expect(services.postgres!.healthcheck?.test?.[1]).toBe("pg_isready");
  });

  it("sets only variables the launcher reads", async () => {
    for (const name of ["migrate", ...Object.keys(ROLES)]) {
      const unknown = Object.keys(services[name]!.environment ?? {}).filter((v) => !known.has(v) && !COMPOSE_ONLY.has(v));
      expect(unknown, name).toEqual([]);
    }
    const example = (await readFile(join(REPO_ROOT, ".env.example"), "utf8")).split("\n").filter((l) => /^[A-Z]/.test(l));
    const names = example.map((l) => l.slice(0, l.indexOf("=")));
    expect(names.filter((v) => !known.has(v) && !COMPOSE_ONLY.has(v))).toEqual([]);
  });

  it("refuses to start without the Postgres password", async () => {
    await writeFile(join(dir, "empty.env"), "");
    const run = promisify(execFile)(COMPOSE, ["--env-file", "empty.env", "config"], { cwd: dir, env: { PATH: process.env.PATH } });
    await expect(run).rejects.toMatchObject({ stderr: expect.stringContaining("set POSTGRES_PASSWORD in .env") });
  });
});
