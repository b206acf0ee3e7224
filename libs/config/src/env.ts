import { z } from "zod";
import { err, ok, type Result } from "@nahida/contracts";

export interface EnvIssue {
  variable: string;
  message: string;
}

/** The set variables: empty strings mean "unset", as in docker-compose files and shell exports. */
export function cleanEnv(env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ""));
}

/**
 * Validates an environment record against a schema and reports every bad variable at
 * once, each by name. Libraries never call this with `process.env`; services do, once.
 */
export function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): Result<z.infer<S>, EnvIssue[]> {
  const parsed = schema.safeParse(cleanEnv(env));
  if (parsed.success) return ok(parsed.data);
  return err(
    parsed.error.issues.map((issue) => ({
      variable: String(issue.path[0] ?? "(environment)"),
      message: issue.message,
    })),
  );
}

export function formatEnvIssues(issues: EnvIssue[]): string {
  return ["invalid configuration:", ...issues.map((i) => `  ${i.variable}: ${i.message}`)].join("\n");
}

const urlWithProtocols = (protocols: string[], example: string) =>
  z.string().refine(
    (value) => {
      try {
        const url = new URL(value);
        return protocols.includes(url.protocol) && url.hostname !== "";
      } catch {
        return false;
      }
    },
    { message: `must be a URL like ${example}` },
  );

/** `host:port,host:port`: each a host name or address and a port. */
const hostPortList = z.string().transform((value, ctx) => {
  const nodes: { host: string; port: number }[] = [];
  for (const item of value.split(",").map((s) => s.trim()).filter(Boolean)) {
    const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$/.exec(item);
    const port = Number(match?.[2]);
    if (!match || port < 1 || port > 65535) {
      ctx.addIssue({ code: "custom", message: `must be host:port pairs, comma-separated (sentinel-1:26379,sentinel-2:26379); "${item}" is not one` });
      return z.NEVER;
    }
    nodes.push({ host: match[1]!.replace(/^\[|\]$/g, ""), port });
  }
  if (nodes.length === 0) {
    ctx.addIssue({ code: "custom", message: "must name at least one host:port" });
    return z.NEVER;
  }
  return nodes;
});

const leaseMs = z.coerce.number({ message: "must be a number of milliseconds" }).int().min(1_000, "must be at least 1000").max(300_000, "must be at most 300000");

export const LogLevel = z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]);

/** Variables every Nahida process reads. */
export const baseEnvSchema = z.object({
  DATABASE_URL: urlWithProtocols(["postgres:", "postgresql:"], "postgresql://user@host:5432/nahida").default(
    "postgresql://postgres@127.0.0.1:5432/nahida",
  ),
  /**
   * Postgres for migrations only (creating the database, the migration lock held across
   * statements, `CREATE INDEX CONCURRENTLY`): Postgres itself, never a transaction pooler.
   * Default: DATABASE_URL. Required with DATABASE_POOLER=transaction (Prisma's `directUrl`).
   */
  DATABASE_DIRECT_URL: urlWithProtocols(["postgres:", "postgresql:"], "postgresql://user@host:5432/nahida").optional(),
  /**
   * `transaction` when DATABASE_URL is a pooler in transaction mode (PgBouncer
   * `pool_mode = transaction`, any version): no named prepared statements, no startup
   * options. Default `none`: Postgres itself or a pooler in session mode.
   */
  DATABASE_POOLER: z.enum(["none", "transaction"]).default("none"),
  REDIS_URL: urlWithProtocols(["redis:", "rediss:"], "redis://127.0.0.1:6379").default("redis://127.0.0.1:6379"),
  /**
   * Redis Sentinel in place of REDIS_URL: each sentinel's `host:port`, comma-separated.
   * Every connection asks them for the current master and follows a failover.
   */
  REDIS_SENTINELS: hostPortList.optional(),
  /**
   * Redis Cluster in place of REDIS_URL: `host:port` of some of its nodes, comma-separated
   * (the rest are found through them). Every key then carries the queue prefix as a hash tag.
   */
  REDIS_CLUSTER_NODES: hostPortList.optional(),
  /** The master group the sentinels watch (`sentinel monitor <name> ...`). */
  REDIS_SENTINEL_NAME: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "must be 1-64 characters of letters, digits, _ . -").default("mymaster"),
  /** The Redis servers' ACL user and password behind Sentinel or in a cluster (with REDIS_URL they are in the URL). */
  REDIS_USERNAME: z.string().optional(),
  REDIS_PASSWORD: z.string().optional(),
  /** The sentinels' own ACL user and password, when they require one. */
  REDIS_SENTINEL_USERNAME: z.string().optional(),
  REDIS_SENTINEL_PASSWORD: z.string().optional(),
  NAHIDA_QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, "must be 1-64 characters of letters, digits, _ . -")
    .default("nahida"),
  LOG_LEVEL: LogLevel.default("info"),
  /** `json` (default): one JSON object a line, for collectors; `pretty`: coloured human lines, for a terminal. */
  LOG_FORMAT: z.enum(["json", "pretty"]).default("json"),
  /** Postgres connections one process keeps at most; replicas × this must stay under the server's max_connections. */
  DATABASE_POOL_SIZE: z.coerce.number({ message: "must be a number" }).int().min(1).max(200).default(10),
  /**
   * The one setting every recovery time derives from (`recoveryTimings`, docs/reliability.md):
   * what a dead process held is taken over within about 1.5 × this. Default 10000. The same
   * on every replica.
   */
  NAHIDA_LEASE_MS: leaseMs.optional(),
});

/**
 * Where migrations go: DATABASE_DIRECT_URL, else DATABASE_URL. Behind a transaction pooler
 * the direct one is required: a migration holds a lock across statements, which such a
 * pooler cannot keep on one server connection.
 */
export function migrationDatabase(env: { DATABASE_URL: string; DATABASE_DIRECT_URL?: string | undefined; DATABASE_POOLER: "none" | "transaction" }): Result<{ url: string; variable: string }, EnvIssue> {
  if (env.DATABASE_DIRECT_URL) return ok({ url: env.DATABASE_DIRECT_URL, variable: "DATABASE_DIRECT_URL" });
  if (env.DATABASE_POOLER === "transaction") {
    return err({ variable: "DATABASE_DIRECT_URL", message: "must be set with DATABASE_POOLER=transaction: migrations hold a lock across statements, which a transaction pooler cannot keep on one connection" });
  }
  return ok({ url: env.DATABASE_URL, variable: "DATABASE_URL" });
}

export const port = z.coerce.number({ message: "must be a port number" }).int().min(1).max(65535);
export const positiveMs = z.coerce.number({ message: "must be a number of milliseconds" }).int().positive();
