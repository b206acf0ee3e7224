import { ErrorBody } from "@nahida/contracts";

/** Error answers every authenticated read route can give, for the OpenAPI document. */
export const readErrorResponses = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody };

/** Error answers every authenticated write route can give: a read's, plus a conflict (409) and an oversize body (413). */
export const writeErrorResponses = { ...readErrorResponses, 409: ErrorBody, 413: ErrorBody };
