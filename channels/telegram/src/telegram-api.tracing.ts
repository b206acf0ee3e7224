import type { Api } from "grammy";
import { SpanKind, SpanStatusCode, withSpan } from "@nahida/observability";

/**
 * Makes every Bot API call of `api` a client span (`telegram.sendMessage`, …) with the
 * method and, on a refusal, Telegram's own `error_code` and `description`. The span has
 * no URL (the URL holds the bot token) and no payload.
 */
export function traceTelegramApi(api: Api): void {
  api.config.use((prev, method, payload, signal) =>
    withSpan(`telegram.${method}`, { kind: SpanKind.CLIENT, attributes: { "rpc.system": "telegram_bot_api", "rpc.method": method } }, async (span) => {
      const response = await prev(method, payload, signal);
      // grammY throws for `ok: false` only after its transformers, so the answer is read here.
      if (!response.ok) {
        span.setAttributes({ "telegram.error_code": response.error_code, ...(response.parameters?.retry_after !== undefined ? { "telegram.retry_after": response.parameters.retry_after } : {}) });
        span.setStatus({ code: SpanStatusCode.ERROR, message: response.description });
      }
      return response;
    }),
  );
}
