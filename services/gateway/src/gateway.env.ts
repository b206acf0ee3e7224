import { z } from "zod";
import { port } from "@nahida/config";

/** Environment variables of the gateway (read by the launcher, once). */
export const gatewayEnvSchema = z.object({
  GATEWAY_HOST: z.string().min(1).default("127.0.0.1"),
  GATEWAY_PORT: port.default(8080),
  /** Largest accepted request body in bytes (413 above it). */
  GATEWAY_BODY_LIMIT_BYTES: z.coerce.number({ message: "must be a number of bytes" }).int().min(1024).max(100 * 1024 * 1024).default(1024 * 1024),
});
export type GatewayEnv = z.infer<typeof gatewayEnvSchema>;
