import { z } from "zod";
import { port } from "@nahida/config";

/**
 * The variables of one Milky (QQ) account, without the instance prefix: the launcher reads
 * the default instance's as `MILKY_BASE_URL`, ..., and those of an instance `qq_ops` as
 * `QQ_OPS_BASE_URL`, ....
 */
export const milkyEnvSchema = z.object({
  /** Where the Milky implementation serves `/api` and `/event`, e.g. http://127.0.0.1:3000. */
  BASE_URL: z.url({ error: "must be the Milky implementation's URL, like http://127.0.0.1:3000" }).refine((url) => /^https?:\/\//.test(url), "must be an http:// or https:// URL"),
  /** The implementation's `access_token`; sent as `Authorization: Bearer`, and required of webhook pushes. */
  ACCESS_TOKEN: z.string().min(1).optional(),
  /** How events arrive: a WebSocket or SSE connection to `/event` (one per account across replicas), or WebHook pushes. */
  EVENT_TRANSPORT: z.enum(["websocket", "sse", "webhook"]).default("websocket"),
  WEBHOOK_HOST: z.string().min(1).default("127.0.0.1"),
  WEBHOOK_PORT: port.default(8082),
  /** Default `/<channel>/webhook`. */
  WEBHOOK_PATH: z.string().regex(/^\/[\w\-/.]*$/, "must be a path like /milky/webhook").optional(),
  /** How workspace files reach the implementation: inlined as `base64://`, or as `file://` paths on a shared filesystem. */
  LOCAL_FILES: z.enum(["base64", "file"]).default("base64"),
});
export type MilkyEnv = z.infer<typeof milkyEnvSchema>;
