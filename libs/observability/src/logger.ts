import pino, { type Logger } from "pino";
import pretty from "pino-pretty";
import { logTraceFields } from "./tracing";

export type { Logger };

export interface LoggerOptions {
  level: string;
  service: string;
  /** `json` (default): a JSON object a line; `pretty`: human lines, coloured on a terminal. */
  format?: "json" | "pretty";
}

/**
 * Structured logs on stdout; secrets are redacted by key name wherever they appear. A line
 * written inside a traced span carries its `trace_id` and `span_id`.
 */
export function createLogger(options: LoggerOptions): Logger {
  const settings = {
    level: options.level,
    base: { service: options.service, pid: process.pid },
    redact: {
      paths: ["token", "*.token", "authorization", "*.authorization", "headers.authorization", "apiKey", "*.apiKey"],
      censor: "[redacted]",
    },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Without a tracing SDK there is never an active span: one lookup, no fields.
    mixin: logTraceFields,
  };
  if (options.format !== "pretty") return pino(settings);
  // In this thread rather than a transport worker: a terminal's log volume is small, and a
  // line written just before exit is never lost.
  return pino(settings, pretty({ colorize: Boolean(process.stdout.isTTY), translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname", sync: true }));
}
