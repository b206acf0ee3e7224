import { z } from "zod";
import { CLIENT_MESSAGE_ID, WEB_MESSAGE_MAX_CHARS, type ClientFrame } from "./web-chat.protocol";

export const ClientMessageId = z.string().regex(CLIENT_MESSAGE_ID, "must be 8-64 characters of A-Z a-z 0-9 _ -");

/** A page's frame, checked before anything is done with it. */
export const ClientFrameSchema: z.ZodType<ClientFrame> = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("hello"), token: z.string().min(1).max(4096).optional() }),
  z.strictObject({ type: z.literal("message"), id: ClientMessageId, text: z.string().min(1).max(WEB_MESSAGE_MAX_CHARS) }),
]);
