import { z } from "zod";

/** Why a Milky API call failed, in the protocol's own terms. */
export type MilkyApiFailure =
  /** The implementation answered with an HTTP status instead of the JSON envelope (401, 404, 415, a proxy's 429 or 5xx). */
  | { kind: "http"; status: number; retryAfterSeconds?: number }
  /** `{status:"failed", retcode, message}`: the implementation refused the call. */
  | { kind: "retcode"; retcode: number; message: string }
  /** No answer: refused, reset or timed out. `sent` is false when the request cannot have reached the implementation. */
  | { kind: "network"; code?: string; sent: boolean }
  /** A 200 whose body is not the protocol's envelope, or whose data does not match the API's schema. */
  | { kind: "malformed"; detail: string };

/** A failed API call. The message names the API and the failure, never the token or the request body. */
export class MilkyApiError extends Error {
  override name = "MilkyApiError";
  constructor(
    readonly api: string,
    readonly failure: MilkyApiFailure,
    options?: { cause?: unknown },
  ) {
    super(`Milky ${api}: ${describeFailure(failure)}`, options);
  }
}

function describeFailure(f: MilkyApiFailure): string {
  switch (f.kind) {
    case "http":
      return `HTTP ${f.status}${HTTP_MEANINGS[f.status] ? ` (${HTTP_MEANINGS[f.status]})` : ""}`;
    case "retcode":
      return `retcode ${f.retcode}: ${f.message}`;
    case "network":
      return `no answer${f.code ? ` (${f.code})` : ""}`;
    case "malformed":
      return `malformed answer: ${f.detail}`;
    default: {
      const unreachable: never = f;
      throw new Error(`unknown failure ${JSON.stringify(unreachable)}`);
    }
  }
}

/** What the protocol says each of its HTTP statuses means. */
const HTTP_MEANINGS: Record<number, string> = {
  401: "the access token is missing or wrong",
  404: "the implementation has no such API",
  415: "the request's Content-Type is not supported",
  429: "too many requests",
};

/** Network error codes that mean the request never reached the implementation. */
const NEVER_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);

const Envelope = z.discriminatedUnion("status", [
  // Older implementations leave `data` out of an answer that has none.
  z.looseObject({ status: z.literal("ok"), retcode: z.number().optional(), data: z.unknown().optional() }),
  z.looseObject({ status: z.literal("failed"), retcode: z.number().int(), message: z.string().catch("") }),
]);

/**
 * One spelling per implementation: `http://HOST:3000/`, `http://host:3000` and
 * `http://host:3000//` are one server (the URL parser lowercases the host and drops a
 * default port; trailing slashes go here). For lock keys and duplicate checks.
 */
export function normalizeMilkyBaseUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  url.pathname = url.pathname.replace(/\/+$/, "");
  url.hash = "";
  return url.toString().replace(/\/+$/, "");
}

export interface MilkyApiClientOptions {
  /** `http://host:port` of the implementation; APIs are `POST {baseUrl}/api/<name>`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>` when set. */
  accessToken?: string;
  /** Per call; a send that hangs would hold up every later message to the chat. Default 60 s. */
  timeoutMs?: number;
}

/**
 * Calls a Milky implementation's HTTP API: `POST {base}/api/<name>` with a JSON body (`{}`
 * when there are no parameters) and the bearer token, answers read as the protocol's
 * envelope and the API's data checked with its own schema. Every failure is a
 * {@link MilkyApiError}; the token travels only in the header, so no URL or error carries it.
 */
export class MilkyApiClient {
  private readonly root: string;

  constructor(private readonly o: MilkyApiClientOptions) {
    this.root = o.baseUrl.replace(/\/+$/, "");
  }

  async call<T extends z.ZodType>(api: string, body: Record<string, unknown>, output: T, signal?: AbortSignal): Promise<z.output<T>> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.o.accessToken) headers.authorization = `Bearer ${this.o.accessToken}`;
    const timeout = AbortSignal.timeout(this.o.timeoutMs ?? 60_000);
    let response: Response;
    try {
      response = await fetch(`${this.root}/api/${api}`, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      const code = errorCode(error);
      throw new MilkyApiError(api, { kind: "network", ...(code ? { code } : {}), sent: !(code && NEVER_SENT_CODES.has(code)) }, { cause: error });
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      const code = errorCode(error);
      throw new MilkyApiError(api, { kind: "network", ...(code ? { code } : {}), sent: true }, { cause: error });
    }
    if (response.status !== 200) {
      const retryAfter = Number(response.headers.get("retry-after"));
      throw new MilkyApiError(api, { kind: "http", status: response.status, ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterSeconds: retryAfter } : {}) });
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new MilkyApiError(api, { kind: "malformed", detail: "the body is not JSON" });
    }
    const envelope = Envelope.safeParse(json);
    if (!envelope.success) throw new MilkyApiError(api, { kind: "malformed", detail: "not a {status, retcode} envelope" });
    if (envelope.data.status === "failed") {
      throw new MilkyApiError(api, { kind: "retcode", retcode: envelope.data.retcode, message: envelope.data.message.slice(0, 500) });
    }
    const data = output.safeParse(envelope.data.data ?? {});
    if (!data.success) throw new MilkyApiError(api, { kind: "malformed", detail: `data does not match ${api}'s output: ${data.error.issues[0]?.path.join(".") || "(root)"}` });
    return data.data;
  }
}

/** undici wraps the socket's error: its code is on `cause`. */
function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  if (error instanceof Error && error.name === "TimeoutError") return "ETIMEDOUT";
  return undefined;
}
