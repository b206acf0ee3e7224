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

export const port = z.coerce.number({ message: "must be a port number" }).int().min(1).max(65535);
export const positiveMs = z.coerce.number({ message: "must be a number of milliseconds" }).int().positive();
