// `npm run migrate`: applies pending migrations and exits (services also do it at start).
import { z } from "zod";
import { baseEnvSchema, formatEnvIssues, migrationDatabase, parseEnv } from "@nahida/config";
import { PreflightError, preparePostgres } from "./preflight";

// As a container's PID 1 (the compose and Kubernetes migration jobs) Node ignores SIGTERM
// without a handler. Stopping mid-way is safe: a migration's transaction rolls back, and a
// no-transaction one runs again whole at the next start.
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => process.exit(1));

const { DATABASE_URL, DATABASE_DIRECT_URL, DATABASE_POOLER } = baseEnvSchema.shape;
const parsed = parseEnv(z.object({ DATABASE_URL, DATABASE_DIRECT_URL, DATABASE_POOLER }), process.env);
if (!parsed.ok) {
  process.stderr.write(`${formatEnvIssues(parsed.error)}\n`);
  process.exit(1);
}
try {
  // Straight to Postgres where DATABASE_URL is a transaction pooler.
  const migrations = migrationDatabase(parsed.value);
  if (!migrations.ok) {
    process.stderr.write(`${formatEnvIssues([migrations.error])}\n`);
    process.exit(1);
  }
  await preparePostgres(migrations.value.url, (message) => process.stdout.write(`${message}\n`), migrations.value.variable);
  process.stdout.write("migrations up to date\n");
} catch (error) {
  process.stderr.write(`nahida: ${error instanceof PreflightError ? error.message : String(error)}\n`);
  process.exit(1);
}
