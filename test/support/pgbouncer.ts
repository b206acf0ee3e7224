import { spawn } from "node:child_process";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { TEST_POSTGRES_URL, waitFor } from "./infra";
import { freePort } from "./ports";

/** Debian's PgBouncer (1.18: no prepared statements in transaction mode), installed by .ci/run. */
export const PGBOUNCER_BIN = "/usr/sbin/pgbouncer";

export interface PgBouncerOptions {
  poolMode?: "session" | "transaction";
  /** Server connections per database and user: fewer than the clients', so transactions share them. */
  defaultPoolSize?: number;
  /** `timezone` on the database entry: the time zone of every server connection it opens. */
  timezone?: string;
}

export interface PgBouncer {
  port: number;
  /** Its process (the bench reads its CPU). */
  pid: number;
  /** `directUrl` (a database on the test Postgres) as reached through this PgBouncer. */
  urlOf(directUrl: string): string;
  /** `SHOW STATS` of one database: transactions and queries PgBouncer passed on. */
  stats(database: string): Promise<{ transactions: number; queries: number }>;
  /** Connections PgBouncer holds to one database: from its clients, and to the server. */
  connections(database: string): Promise<{ clients: number; servers: number }>;
  output(): string;
  close(): Promise<void>;
}

/**
 * A real PgBouncer in front of the test Postgres, every database by wildcard, trusting the
 * test server's users (as the server itself does). As root it drops to `postgres`, since
 * PgBouncer refuses to run as root.
 */
export async function startPgBouncer(options: PgBouncerOptions = {}): Promise<PgBouncer> {
  const server = new URL(TEST_POSTGRES_URL);
  const user = decodeURIComponent(server.username || "postgres");
  const dir = await mkdtemp(join(tmpdir(), "nahida-pgbouncer-"));
  await chmod(dir, 0o755);
  const port = await freePort();
  const entry = [`host=${server.hostname}`, `port=${server.port || 5432}`, ...(options.timezone ? [`timezone=${options.timezone}`] : [])].join(" ");
  const config = [
    "[databases]",
    `* = ${entry}`,
    "[pgbouncer]",
    "listen_addr = 127.0.0.1",
    `listen_port = ${port}`,
    "unix_socket_dir =",
    "auth_type = trust",
    `auth_file = ${join(dir, "users.txt")}`,
    `admin_users = ${user}`,
    `pool_mode = ${options.poolMode ?? "transaction"}`,
    `default_pool_size = ${options.defaultPoolSize ?? 8}`,
    "max_client_conn = 1000",
    // SHOW STATS totals are refreshed once per period.
    "stats_period = 1",
    "",
  ].join("\n");
  await writeFile(join(dir, "pgbouncer.ini"), config, { mode: 0o644 });
  await writeFile(join(dir, "users.txt"), `"${user}" ""\n`, { mode: 0o644 });
  const args = [...(process.getuid?.() === 0 ? ["-u", "postgres"] : []), join(dir, "pgbouncer.ini")];
  const child = spawn(PGBOUNCER_BIN, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  let alive = true;
  void exited.then(() => (alive = false));

  const admin = async <T extends object>(sql: string): Promise<T[]> => {
    const client = new pg.Client({ host: "127.0.0.1", port, user, database: "pgbouncer" });
    client.on("error", () => undefined);
    await client.connect();
    try {
      // The admin console speaks only the simple query protocol: no parameters.
      return (await client.query<T>(sql)).rows;
    } finally {
      await client.end();
    }
  };
  try {
    await waitFor(async () => {
      if (!alive) throw new Error(`pgbouncer exited:\n${output}`);
      return admin("SHOW VERSION").then(() => true, () => false);
    }, 10_000, "pgbouncer to listen");
  } catch (error) {
    child.kill("SIGKILL");
    await rm(dir, { recursive: true, force: true });
    throw error;
  }

  return {
    port,
    pid: child.pid!,
    urlOf(directUrl) {
      const url = new URL(directUrl);
      url.hostname = "127.0.0.1";
      url.port = String(port);
      return url.toString();
    },
    async stats(database) {
      const rows = await admin<{ database: string; total_xact_count: string; total_query_count: string }>("SHOW STATS");
      const row = rows.find((r) => r.database === database);
      return { transactions: Number(row?.total_xact_count ?? 0), queries: Number(row?.total_query_count ?? 0) };
    },
    async connections(database) {
      const of = (rows: { database: string }[]) => rows.filter((r) => r.database === database).length;
      return { clients: of(await admin<{ database: string }>("SHOW CLIENTS")), servers: of(await admin<{ database: string }>("SHOW SERVERS")) };
    },
    output: () => output,
    async close() {
      if (alive) {
        // SIGINT: PgBouncer's safe shutdown waits for its clients' transactions; not for long.
        child.kill("SIGINT");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
        await exited;
        clearTimeout(timer);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
