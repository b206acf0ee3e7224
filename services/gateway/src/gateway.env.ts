import { z } from "zod";
import { port } from "@nahida/config";

/** Environment variables of the gateway (read by the launcher, once). */
export const gatewayEnvSchema = z.object({
  GATEWAY_HOST: z.string().min(1).default("127.0.0.1"),
  GATEWAY_PORT: port.default(8080),
  /** Largest accepted request body in bytes (413 above it). */
  GATEWAY_BODY_LIMIT_BYTES: z.coerce.number({ message: "must be a number of bytes" }).int().min(1024).max(100 * 1024 * 1024).default(1024 * 1024),
  /** Bootstraps an admin API token with this secret (at least 16 characters). */
  NAHIDA_API_TOKEN: z.string().min(16, "must be at least 16 characters").max(512).regex(/^[A-Za-z0-9._~+/=-]+$/, "must be a bearer token (letters, digits, . _ ~ + / = -)").optional(),
  /** Requests per minute per API token, shared by all gateway replicas. */
  NAHIDA_API_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(600),
  /** bull-board under /admin/queues (admin tokens only): `read-only` (default), `read-write` (retry, promote, clean, remove jobs) or `off`. */
  NAHIDA_QUEUE_DASHBOARD: z.enum(["read-only", "read-write", "off"]).default("read-only"),
  /**
   * The proxies in front of the gateway whose X-Forwarded-For/-Proto/-Host it believes:
   * `true` (whoever connects) or their addresses and CIDRs, comma-separated. Unset: none.
   */
  GATEWAY_TRUST_PROXY: z
    .string()
    .regex(/^(true|[0-9a-fA-F.:/]+(\s*,\s*[0-9a-fA-F.:/]+)*)$/, "must be true, or proxy addresses/CIDRs, comma-separated")
    .transform((v): true | string => (v === "true" ? true : v))
    .optional(),
  /** Signs browsers' sign-in cookies (console, queue dashboard); without it a random one is kept in Redis for every replica. */
  GATEWAY_SESSION_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
});
export type GatewayEnv = z.infer<typeof gatewayEnvSchema>;
