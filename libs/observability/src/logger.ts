import pino, { type Logger } from "pino";

export type { Logger };

export interface LoggerOptions {
  level: string;
  service: string;
}

/** Structured JSON logs on stdout; secrets are redacted by key name wherever they appear. */
export function createLogger(options: LoggerOptions): Logger {
  return pino({
    level: options.level,
    base: { service: options.service, pid: process.pid },
    redact: {
      paths: ["token", "*.token", "authorization", "*.authorization", "headers.authorization", "apiKey", "*.apiKey"],
      censor: "[redacted]",
    },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
