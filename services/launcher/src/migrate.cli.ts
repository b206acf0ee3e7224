// `npm run migrate`: applies pending migrations and exits (services also do it at start).
import { z } from "zod";
import { baseEnvSchema, formatEnvIssues, parseEnv } from "@nahida/config";
import { PreflightError, preparePostgres } from "./preflight";

const parsed = parseEnv(z.object({ DATABASE_URL: baseEnvSchema.shape.DATABASE_URL }), process.env);
if (!parsed.ok) {
  process.stderr.write(`${formatEnvIssues(parsed.error)}\n`);
  process.exit(1);
}
try {
  await preparePostgres(parsed.value.DATABASE_URL, (message) => process.stdout.write(`${message}\n`));
  process.stdout.write("migrations up to date\n");
} catch (error) {
  process.stderr.write(`nahida: ${error instanceof PreflightError ? error.message : String(error)}\n`);
  process.exit(1);
}
