import { z } from "zod";
import { baseEnvSchema, positiveMs } from "@nahida/config";
import { gatewayEnvSchema } from "@nahida/gateway";

/** Every service this process can run; NAHIDA_SERVICES picks a subset. */
export const SERVICE_NAMES = ["gateway"] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

const serviceList = z
  .string()
  .transform((value, ctx) => {
    const names = value.split(",").map((s) => s.trim()).filter(Boolean);
    const unknown = names.filter((n) => !(SERVICE_NAMES as readonly string[]).includes(n));
    if (unknown.length > 0 || names.length === 0) {
      ctx.addIssue({
        code: "custom",
        message: `unknown service ${unknown.join(", ") || "(empty list)"}; known: ${SERVICE_NAMES.join(", ")}`,
      });
      return z.NEVER;
    }
    return [...new Set(names)] as ServiceName[];
  })
  .default([...SERVICE_NAMES]);

export const launcherEnvSchema = z.object({
  ...baseEnvSchema.shape,
  ...gatewayEnvSchema.shape,
  NAHIDA_SERVICES: serviceList,
  /** How long SIGTERM waits for running work before exiting anyway. */
  NAHIDA_SHUTDOWN_TIMEOUT_MS: positiveMs.default(25_000),
});
export type LauncherEnv = z.infer<typeof launcherEnvSchema>;
