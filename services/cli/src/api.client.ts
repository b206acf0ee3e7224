/** A failed API call, with the API's own error code and message. */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface ApiClientOptions {
  baseUrl: string;
  token?: string;
  fetch?: typeof fetch;
}

/** Minimal client of the gateway REST API. */
export function createApiClient(o: ApiClientOptions) {
  const doFetch = o.fetch ?? fetch;
  return async function request<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    let res: Response;
    try {
      res = await doFetch(new URL(path, o.baseUrl), {
        method,
        headers: {
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...(o.token ? { authorization: `Bearer ${o.token}` } : {}),
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new ApiError(0, "unreachable", `cannot reach ${o.baseUrl}: ${(error as Error).message}`);
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const error = (json as { error?: { code?: string; message?: string } } | undefined)?.error;
      throw new ApiError(res.status, error?.code ?? `http_${res.status}`, error?.message ?? (text.slice(0, 200) || res.statusText));
    }
    return json as T;
  };
}

export type ApiRequest = ReturnType<typeof createApiClient>;
