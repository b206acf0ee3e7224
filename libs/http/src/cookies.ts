/** The value of cookie `name` in a Cookie header, as sent (not decoded). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return rest.join("=");
  }
  return undefined;
}

/**
 * Whether the browser reached the gateway over HTTPS: directly, or through a proxy that
 * ended TLS and said so in `X-Forwarded-Proto`. Only ever used to make a cookie stricter
 * (`Secure`), so a forged header gains nothing.
 */
export function reachedOverHttps(request: { protocol: string; headers: Record<string, string | string[] | undefined> }): boolean {
  const forwarded = request.headers["x-forwarded-proto"];
  return request.protocol === "https" || (typeof forwarded === "string" && forwarded.split(",")[0]!.trim() === "https");
}
