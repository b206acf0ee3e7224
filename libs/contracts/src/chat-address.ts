import { z } from "zod";
import { err, ok, type Result } from "./result";

/** Chat types a ChatAddress may name. Case-sensitive. */
export const CHAT_TYPES = ["private", "group", "channel"] as const;
export const ChatType = z.enum(CHAT_TYPES);
export type ChatType = z.infer<typeof ChatType>;

/**
 * A typed send target: `<channel>:<type>:<id>[:<thread>]`.
 * `telegram:group:-1001234567890:42` is forum topic 42 of a Telegram supergroup.
 */
export interface ChatAddress {
  channel: string;
  type: ChatType;
  id: string;
  thread?: string;
}

export const CHAT_ADDRESS_FORM = "<channel>:<type>:<id>[:<thread>] with type one of private|group|channel, e.g. telegram:private:12345";

const CHANNEL_PATTERN = /^[a-z][a-z0-9_-]*$/;

/** Whether `name` can be the channel of a ChatAddress: `[a-z][a-z0-9_-]*`, such as `telegram` or `support`. */
export function isChannelName(name: string): boolean {
  return CHANNEL_PATTERN.test(name);
}

export interface ChatAddressError {
  code: "invalid_address";
  input: string;
  message: string;
}

function invalid(input: string, reason: string): Result<never, ChatAddressError> {
  const shown = input.length > 80 ? `${input.slice(0, 80)}…` : input;
  return err({
    code: "invalid_address",
    input,
    message: `invalid chat address ${JSON.stringify(shown)}: ${reason}; expected ${CHAT_ADDRESS_FORM}`,
  });
}

/** Parses a ChatAddress string; every rejection names the expected form. */
/** Longest accepted address; real ids are short, and this bounds what reaches logs and keys. */
export const CHAT_ADDRESS_MAX_LENGTH = 256;

export function parseChatAddress(input: string): Result<ChatAddress, ChatAddressError> {
  if (typeof input !== "string") return invalid(String(input), "not a string");
  if (input.length > CHAT_ADDRESS_MAX_LENGTH) return invalid(input, `longer than ${CHAT_ADDRESS_MAX_LENGTH} characters`);
  const parts = input.split(":");
  if (parts.length < 3) {
    if (parts.length === 2) return invalid(input, "two-part legacy address, the chat type is missing");
    return invalid(input, "too few parts");
  }
  if (parts.length > 4) return invalid(input, "too many parts");
  const [channel, type, id, thread] = parts as [string, string, string, string | undefined];
  if (channel === "" || type === "" || id === "" || thread === "") return invalid(input, "empty part");
  if (!CHANNEL_PATTERN.test(channel)) return invalid(input, `channel ${JSON.stringify(channel)} must match [a-z][a-z0-9_-]*`);
  const parsedType = ChatType.safeParse(type);
  if (!parsedType.success) return invalid(input, `unknown chat type ${JSON.stringify(type)}`);
  if (/[\s\p{Cc}]/u.test(id) || (thread !== undefined && /[\s\p{Cc}]/u.test(thread))) {
    return invalid(input, "whitespace or control characters inside id or thread");
  }
  return ok(thread === undefined ? { channel, type: parsedType.data, id } : { channel, type: parsedType.data, id, thread });
}

export function formatChatAddress(address: ChatAddress): string {
  const base = `${address.channel}:${address.type}:${address.id}`;
  return address.thread === undefined ? base : `${base}:${address.thread}`;
}

/** zod schema for a ChatAddress string at a boundary; the parsed value stays a string. */
export const ChatAddressString = z.string().superRefine((value, ctx) => {
  const parsed = parseChatAddress(value);
  if (!parsed.ok) ctx.addIssue({ code: "custom", message: parsed.error.message });
});
