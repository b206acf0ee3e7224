// Generates the Prisma client at install time.
// The Prisma CLI insists on locating its schema-engine binary even for `generate`, which
// never runs it; that binary is downloaded from Prisma's own host, which may be unreachable
// (air-gapped CI). Any path satisfies the lookup, so point it at this file unless the
// operator supplied a real engine.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const env = { ...process.env };
env.PRISMA_SCHEMA_ENGINE_BINARY ??= fileURLToPath(import.meta.url);
env.PRISMA_HIDE_UPDATE_MESSAGE = "1";
const result = spawnSync("npx", ["--no-install", "prisma", "generate"], { stdio: "inherit", env });
process.exit(result.status ?? 1);
