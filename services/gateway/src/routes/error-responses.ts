import { ErrorBody } from "@nahida/contracts";

/** Error answers every authenticated read route can give, for the OpenAPI document. */
export const readErrorResponses = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody };
