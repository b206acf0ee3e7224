import { hostname } from "node:os";
import { formatEnvIssues, parseEnv } from "@nahida/config";
import { createDatabase } from "@nahida/db";
import { createLogger } from "@nahida/observability";
import { createRedis } from "@nahida/queue";
import { startGateway } from "@nahida/gateway";
import { launcherEnvSchema, type ServiceName } from "./launcher.env";
import { PreflightError, checkRedis, preparePostgres } from "./preflight";

interface Stoppable {
  name: string;
  stop(): Promise<void>;
}

const parsed = parseEnv(launcherEnvSchema, process.env);
if (!parsed.ok) {
  process.stderr.write(`${formatEnvIssues(parsed.error)}\n`);
  process.exit(1);
}
const env = parsed.value;
const logger = createLogger({ level: env.LOG_LEVEL, service: env.NAHIDA_SERVICES.join("+") });

async function main(): Promise<void> {
  await Promise.all([
    preparePostgres(env.DATABASE_URL, (message) => logger.info(message)),
    checkRedis(env.REDIS_URL),
  ]);

  const db = createDatabase({ url: env.DATABASE_URL, onPoolError: (e) => logger.warn({ err: e.message }, "postgres pool error") });
  const redis = createRedis({ url: env.REDIS_URL, connectionName: `nahida:${hostname()}:${process.pid}` });
  redis.on("error", (e) => logger.warn({ err: e.message }, "redis error"));

  const running: Stoppable[] = [];
  const starters: Record<ServiceName, () => Promise<Stoppable>> = {
    gateway: async () => {
      const gateway = await startGateway({
        host: env.GATEWAY_HOST,
        port: env.GATEWAY_PORT,
        bodyLimitBytes: env.GATEWAY_BODY_LIMIT_BYTES,
        db,
        redis,
        logger: logger.child({ component: "gateway" }),
      });
      logger.info({ address: gateway.address }, "gateway listening");
      return { name: "gateway", stop: gateway.stop };
    },
  };
  for (const name of env.NAHIDA_SERVICES) running.push(await starters[name]());
  logger.info({ services: env.NAHIDA_SERVICES }, "nahida started");

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "draining");
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs: env.NAHIDA_SHUTDOWN_TIMEOUT_MS }, "shutdown timed out; exiting");
      process.exit(1);
    }, env.NAHIDA_SHUTDOWN_TIMEOUT_MS);
    deadline.unref();
    for (const service of running.reverse()) {
      await service.stop().catch((e) => logger.error({ service: service.name, err: (e as Error).message }, "stop failed"));
    }
    await db.close();
    redis.disconnect();
    logger.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
}

main().catch((error) => {
  if (error instanceof PreflightError) {
    process.stderr.write(`nahida: ${error.message}\n`);
  } else {
    logger.fatal({ err: error }, "startup failed");
  }
  process.exit(1);
});
