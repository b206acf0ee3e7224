import { z } from "zod";

const flag = z.enum(["true", "false"], { message: "must be true or false" }).transform((v) => v === "true");

/** `https://shop.example.com`: a scheme and a host, nothing after. */
const origin = z.string().regex(/^https?:\/\/[^/\s]+$/, "must be origins like https://shop.example.com, comma-separated");

/**
 * The variables of one web chat, without the instance prefix: the default instance's are
 * `WEB_SECRET`, ..., those of an instance `support` are `SUPPORT_SECRET`, ....
 */
export const webEnvSchema = z.object({
  /** Signs visitor tokens (HS256) and anonymous visitors' cookies. */
  SECRET: z.string({ error: "is required" }).min(32, "must be at least 32 characters"),
  /** Lets visitors without a token chat, identified by a signed cookie. */
  ANONYMOUS: flag.default(false),
  /** Where the gateway serves the page; its WebSocket is `<PATH>/ws`. */
  PATH: z
    .string()
    .regex(/^\/[a-z0-9_-]+(\/[a-z0-9_-]+)*$/, "must be a path like /chat")
    .refine((p) => !/^\/(api|admin|console|metrics|health|ready)(\/|$)/.test(p), "is a path the gateway already serves")
    .default("/chat"),
  /**
   * Sites allowed to embed the page and open its WebSocket, besides the gateway's own
   * origin; a socket from any other origin is refused.
   */
  ORIGINS: z
    .string()
    .transform((v) => v.split(",").map((s) => s.trim()).filter(Boolean))
    .pipe(z.array(origin))
    .default([]),
  /** Messages one visitor may send per minute, across every replica. */
  RATE_PER_MINUTE: z.coerce.number().int().min(1).max(10_000).default(20),
  /** The page's title. */
  TITLE: z.string().min(1).max(80).default("Chat"),
  /** Messages a page is given when it connects. */
  HISTORY_LIMIT: z.coerce.number().int().min(1).max(500).default(50),
});
export type WebEnv = z.infer<typeof webEnvSchema>;
