import { formatEnvIssues } from "@nahida/config";
import { createLogger } from "@nahida/observability";
import { readLauncherEnv } from "./launcher.env";
import { startNahida } from "./nahida";
import { PreflightError } from "./preflight";
import type { Tracing } from "./tracing";

/** A signal that came before the services were up, and the handlers that kept it. */
export interface EarlySignals {
  early: { signal: NodeJS.Signals | null; onSignal?: (signal: NodeJS.Signals) => void };
  handlers: ((signal: NodeJS.Signals) => void)[];
}

/**
 * The process: reads the environment, starts the selected services, drains them on
 * SIGTERM/SIGINT. A signal during the start drains what started once the start is done,
 * and exits 0 either way; a start that hangs past the shutdown timeout is left (nothing it
 * started holds more than a SIGKILL would leave behind).
 */
export async function launch(tracing: Tracing | null, signals?: EarlySignals): Promise<void> {
  const parsed = await readLauncherEnv(process.env);
  if (!parsed.ok) {
    process.stderr.write(`${formatEnvIssues(parsed.error)}\n`);
    process.exit(1);
  }
  const env = parsed.value;
  const logger = createLogger({ level: env.LOG_LEVEL, service: env.NAHIDA_SERVICES.join("+"), format: env.LOG_FORMAT });
  let leaving: NodeJS.Timeout | undefined;
  const leaveDuringStart = (signal: NodeJS.Signals) => {
    logger.info({ signal }, "stopping while starting");
    leaving ??= setTimeout(() => {
      logger.warn({ timeoutMs: env.NAHIDA_SHUTDOWN_TIMEOUT_MS }, "the start did not finish; exiting");
      process.exit(0);
    }, env.NAHIDA_SHUTDOWN_TIMEOUT_MS).unref();
  };
  if (signals) {
    signals.early.onSignal = leaveDuringStart;
    if (signals.early.signal) leaveDuringStart(signals.early.signal);
  }

  try {
    const nahida = await startNahida(env, logger);
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
      // The spans of the drain itself are buffered: send them before exiting.
      await tracing?.stop().catch((e: unknown) => logger.warn({ err: (e as Error).message }, "could not flush the last spans"));
      logger.info("stopped");
      process.exit(0);
    };
    process.on("SIGTERM", () => void stop("SIGTERM"));
    process.on("SIGINT", () => void stop("SIGINT"));
    for (const handler of signals?.handlers ?? []) {
      process.off("SIGTERM", handler);
      process.off("SIGINT", handler);
    }
    // A signal that came while starting: drain what started, now, under the drain's own timeout.
    clearTimeout(leaving);
    if (signals?.early.signal) return void stop(signals.early.signal);
    // Only once the handlers exist: until then SIGTERM kills at once, without draining, and a
    // supervisor that waits for this line may send it the moment the line is out (a
    // synchronous log stream, as LOG_FORMAT=pretty is, writes it before this code goes on).
    logger.info({ services: nahida.services, tracing: env.tracing }, "nahida started");
  } catch (error) {
    if (error instanceof PreflightError) process.stderr.write(`nahida: ${error.message}\n`);
    else logger.fatal({ err: error }, "startup failed");
    // Asked to stop while starting: a start that then failed is still a stop that was asked for.
    process.exit(signals?.early.signal ? 0 : 1);
  }
}
