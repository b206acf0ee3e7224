import { formatEnvIssues, parseEnv } from "@nahida/config";
import { createLogger } from "@nahida/observability";
import { launcherEnvSchema } from "./launcher.env";
import { startNahida } from "./nahida";
import { PreflightError } from "./preflight";

const parsed = parseEnv(launcherEnvSchema, process.env);
if (!parsed.ok) {
  process.stderr.write(`${formatEnvIssues(parsed.error)}\n`);
  process.exit(1);
}
const env = parsed.value;
const logger = createLogger({ level: env.LOG_LEVEL, service: env.NAHIDA_SERVICES.join("+") });

try {
  const nahida = await startNahida(env, logger);
  logger.info({ services: nahida.services }, "nahida started");
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "draining");
    setTimeout(() => {
      logger.error({ timeoutMs: env.NAHIDA_SHUTDOWN_TIMEOUT_MS }, "shutdown timed out; exiting");
      process.exit(1);
    }, env.NAHIDA_SHUTDOWN_TIMEOUT_MS).unref();
    await nahida.stop();
    logger.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
} catch (error) {
  if (error instanceof PreflightError) process.stderr.write(`nahida: ${error.message}\n`);
  else logger.fatal({ err: error }, "startup failed");
  process.exit(1);
}
