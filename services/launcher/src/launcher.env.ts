import { z } from "zod";
import { baseEnvSchema, positiveMs } from "@nahida/config";
import { agentWorkerEnvSchema } from "@nahida/agent-worker";
import { gatewayEnvSchema } from "@nahida/gateway";
import { telegramEnvSchema } from "@nahida/channel-telegram";

/** Every service this process can run; NAHIDA_SERVICES picks a subset. */
export const SERVICE_NAMES = ["gateway", "ingress-telegram", "agent-worker", "delivery"] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

const serviceList = z.string().transform((value, ctx) => {
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
});

export const launcherEnvSchema = z
  .object({
    ...baseEnvSchema.shape,
    ...gatewayEnvSchema.shape,
    ...telegramEnvSchema.shape,
    ...agentWorkerEnvSchema.shape,
    /** Default: every service that is configured (ingress-telegram needs TELEGRAM_BOT_TOKEN). */
    NAHIDA_SERVICES: serviceList.optional(),
    /** Platform sends running at the same time in one delivery process. */
    DELIVERY_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
    /** How long SIGTERM waits for running work before exiting anyway. */
    NAHIDA_SHUTDOWN_TIMEOUT_MS: positiveMs.default(25_000),
  })
  .superRefine((env, ctx) => {
    if (env.NAHIDA_SERVICES?.includes("ingress-telegram") && !env.TELEGRAM_BOT_TOKEN) {
      ctx.addIssue({ code: "custom", path: ["TELEGRAM_BOT_TOKEN"], message: "is required to run ingress-telegram" });
    }
    if (env.TELEGRAM_MODE === "webhook" && env.TELEGRAM_BOT_TOKEN && !env.TELEGRAM_WEBHOOK_SECRET) {
      ctx.addIssue({ code: "custom", path: ["TELEGRAM_WEBHOOK_SECRET"], message: "is required when TELEGRAM_MODE=webhook" });
    }
  })
  .transform((env) => ({
    ...env,
    NAHIDA_SERVICES:
      env.NAHIDA_SERVICES ?? SERVICE_NAMES.filter((name) => name !== "ingress-telegram" || env.TELEGRAM_BOT_TOKEN !== undefined),
  }));
export type LauncherEnv = z.infer<typeof launcherEnvSchema>;
