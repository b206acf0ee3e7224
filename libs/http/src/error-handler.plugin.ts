import fp from "fastify-plugin";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import type { z } from "zod";
import { ErrorBody as ErrorBodySchema, NahidaError, httpStatusFor, type ErrorCode } from "@nahida/contracts";
import type { FastifyError } from "fastify";

/** The one JSON error shape of every HTTP answer (the contract's `ErrorBody`). */
type ErrorBody = z.infer<typeof ErrorBodySchema>;

function codeForStatus(status: number): ErrorCode {
  if (status === 401) return "unauthorized";
  if (status === 403) return "forbidden";
  if (status === 404) return "not_found";
  if (status === 409) return "conflict";
  if (status === 413) return "payload_too_large";
  if (status === 429) return "rate_limited";
  if (status >= 400 && status < 500) return "bad_request";
  return "internal";
}

/**
 * Maps every error to `{error: {code, message}}`. Schema violations name the field;
 * client errors keep their message; anything 5xx is logged and answered with a generic
 * message, never internals.
 */
export const errorHandlerPlugin = fp(async (app) => {
  app.setErrorHandler((error: FastifyError | NahidaError, request, reply) => {
    if (hasZodFastifySchemaValidationErrors(error)) {
      const message = error.validation
        .map((v) => {
          const field = v.instancePath.replace(/^\//, "").replaceAll("/", ".");
          return `${error.validationContext ?? "request"}${field ? `.${field}` : ""}: ${v.message}`;
        })
        .join("; ");
      const isAddress = error.validation.some((v) => v.instancePath === "/target");
      return reply.status(400).send({ error: { code: isAddress ? "invalid_address" : "bad_request", message } } satisfies ErrorBody);
    }
    let status: number;
    let code: ErrorCode;
    if (error instanceof NahidaError) {
      status = httpStatusFor(error.code);
      code = error.code;
    } else {
      status = typeof error.statusCode === "number" && error.statusCode >= 400 ? error.statusCode : 500;
      code = codeForStatus(status);
    }
    if (status >= 500) {
      request.log.error({ err: error }, "request failed");
      const body: ErrorBody = { error: { code, message: code === "not_ready" ? error.message : "internal error" } };
      return reply.status(status).send(body);
    }
    return reply.status(status).send({ error: { code, message: error.message } } satisfies ErrorBody);
  });
  app.setNotFoundHandler((request, reply) => {
    const body: ErrorBody = { error: { code: "not_found", message: `no route ${request.method} ${request.url.split("?")[0]}` } };
    return reply.status(404).send(body);
  });
});
