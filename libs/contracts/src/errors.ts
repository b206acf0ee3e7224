import { z } from "zod";

/** Stable error codes shared across services and the REST API. */
export const ErrorCode = z.enum([
  "bad_request",
  "invalid_address",
  /** A JSON body nested deeper than MAX_JSON_DEPTH (64) levels. */
  "json_too_deep",
  "unauthorized",
  "forbidden",
  "not_found",
  "conflict",
  "payload_too_large",
  "rate_limited",
  "not_ready",
  "internal",
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

/** Base class for errors that carry a stable code across boundaries. */
export class NahidaError extends Error {
  override name = "NahidaError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** HTTP status for each code; an exhaustive switch so a new code cannot be forgotten. */
export function httpStatusFor(code: ErrorCode): number {
  switch (code) {
    case "bad_request":
    case "invalid_address":
    case "json_too_deep":
      return 400;
    case "unauthorized":
      return 401;
    case "forbidden":
      return 403;
    case "not_found":
      return 404;
    case "conflict":
      return 409;
    case "payload_too_large":
      return 413;
    case "rate_limited":
      return 429;
    case "not_ready":
      return 503;
    case "internal":
      return 500;
    default: {
      const unreachable: never = code;
      return unreachable;
    }
  }
}
