import { z } from "zod";
import { ChatAddressString } from "./chat-address";
import { DeliveryPolicy, DeliveryStatus } from "./enums";
import { ErrorCode } from "./errors";
import { AttachmentType, MessageContext } from "./messages";

/** Scopes of an API token; `admin` implies the others. */
export const TokenScope = z.enum(["send", "read", "cron", "admin"]);
export type TokenScope = z.infer<typeof TokenScope>;


export const ErrorBody = z.object({ error: z.object({ code: ErrorCode, message: z.string() }) }).meta({ id: "Error" });

/** Postgres text cannot hold NUL; refusing it here keeps it a 400 instead of a failed insert. */
export const noNul = (schema: z.ZodString) => schema.refine((v) => !v.includes("\u0000"), { message: "must not contain NUL characters" });

/** An attachment of `POST /api/send`: a file inside the workspace directory. */
export const ApiAttachment = z
  .strictObject({
    type: AttachmentType,
    path: noNul(z.string().min(1).max(1024)).describe("path relative to the workspace directory"),
    filename: noNul(z.string().min(1).max(255)).optional(),
    caption: noNul(z.string().max(1024)).optional(),
  })
  .meta({ id: "Attachment" });

export const SendRequest = z
  .strictObject({
    target: ChatAddressString.describe("typed chat address <channel>:<type>:<id>[:<thread>], e.g. telegram:private:12345"),
    text: noNul(z.string().max(20_000)).default(""),
    reply_to: z
      .union([z.string().regex(/^\d{1,20}$/, "must be a platform message id"), z.number().int().min(1).max(Number.MAX_SAFE_INTEGER)])
      .transform(String)
      .optional()
      .describe("platform message id to reply to"),
    attachments: z.array(ApiAttachment).max(10).default([]),
    session_id: z.uuid().optional().describe("record the sent message in this session's history"),
    // No default here: the body's hash keys Idempotency-Key replays, and a request that
    // leaves it out must hash as it did before the field existed.
    delivery_policy: DeliveryPolicy.optional().describe(
      "if the sending worker dies between the platform accepting a part and recording it: at_least_once (default) sends that part again, at_most_once does not",
    ),
  })
  .refine((body) => body.text.trim() !== "" || body.attachments.length > 0, { message: "text or attachments are required", path: ["text"] })
  .meta({ id: "SendRequest" });
export type SendRequest = z.infer<typeof SendRequest>;

export const SendResponse = z.object({ delivery_id: z.uuid(), status: DeliveryStatus }).meta({ id: "SendResponse" });

export const DeliveryView = z
  .object({
    id: z.uuid(),
    target: z.string(),
    status: DeliveryStatus,
    attempts: z.number().int(),
    platform_message_ids: z.array(z.string()).describe("ids of the parts known to be accepted, in order"),
    delivery_policy: DeliveryPolicy,
    uncertain: z.boolean().describe("true when a part's outcome was unknown after its worker died (see uncertain_parts)"),
    uncertain_parts: z
      .array(z.number().int())
      .describe("0-based parts of unknown outcome: sent again under at_least_once (may be duplicated), skipped under at_most_once (may be missing)"),
    error: z.string().optional(),
    source: z.string(),
    created_at: z.iso.datetime(),
    sent_at: z.iso.datetime().optional(),
  })
  .meta({ id: "Delivery" });
export type DeliveryView = z.infer<typeof DeliveryView>;

export const SessionView = z
  .object({
    id: z.uuid(),
    chat_address: z.string().nullable(),
    channel: z.string().nullable(),
    status: z.string(),
    title: z.string().nullable(),
    parent_id: z.uuid().nullable(),
    created_at: z.iso.datetime(),
    last_activity_at: z.iso.datetime(),
  })
  .meta({ id: "Session" });
export type SessionView = z.infer<typeof SessionView>;

export const Paging = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

export const DeliveryListQuery = z
  .strictObject({
    ...Paging.shape,
    status: DeliveryStatus.optional(),
    target: ChatAddressString.optional().describe("only deliveries to this chat address"),
    source: noNul(z.string().min(1).max(200)).optional().describe("only deliveries from this source: api, agent, command, cron:<job id>, ..."),
    uncertain: z
      .enum(["true", "false"])
      .transform((v) => v === "true")
      .optional()
      .describe("true: only deliveries with a part of unknown outcome (uncertain_parts); false: only those without"),
    since: z.iso.datetime({ offset: true }).optional().describe("only deliveries created at or after this instant"),
    until: z.iso.datetime({ offset: true }).optional().describe("only deliveries created before this instant"),
  })
  .refine((q) => !q.since || !q.until || Date.parse(q.since) < Date.parse(q.until), { message: "since must be before until", path: ["until"] });

export const DeliveryList = z
  .object({ deliveries: z.array(DeliveryView), total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .meta({ id: "DeliveryList" });

export const SessionListQuery = z.strictObject({
  ...Paging.shape,
  channel: z.string().regex(/^[a-z][a-z0-9_-]*$/, "must be a channel name such as telegram").optional(),
  active_since: z.iso.datetime({ offset: true }).optional().describe("only sessions active at or after this instant"),
  status: z.enum(["active", "archived"]).optional(),
  chat: noNul(z.string().trim().min(1).max(256)).optional().describe("only sessions whose chat address contains this text (any case), e.g. a visitor or chat id"),
});

export const SessionList = z
  .object({ sessions: z.array(SessionView), total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .meta({ id: "SessionList" });

export const HistoryMessage = z
  .object({
    id: z.uuid(),
    role: z.string(),
    content: z.string(),
    source: z.string(),
    created_at: z.iso.datetime(),
    context: MessageContext.optional(),
    tool_calls: z.array(z.object({ name: z.string() })).optional(),
    tool_name: z.string().optional(),
    /** Summarized by a compaction checkpoint: the model sees the summary instead of it (docs/compaction.md). */
    compacted: z.boolean(),
  })
  .meta({ id: "HistoryMessage" });
export type HistoryMessage = z.infer<typeof HistoryMessage>;

export const HistoryQuery = z.strictObject({ ...Paging.shape });

export const HistoryView = z
  .object({
    messages: z.array(HistoryMessage),
    total: z.number().int(),
    /** True when a message was cut or had content removed, or older messages exist beyond this page. */
    truncated: z.boolean(),
    /** The session's newest compaction checkpoint: its summary carries every earlier one's, in place of the messages marked `compacted`. */
    compaction: z
      .object({ id: z.uuid(), covered_turns: z.number().int(), reason: z.string(), summary: z.string(), created_at: z.iso.datetime() })
      .nullable(),
  })
  .meta({ id: "History" });
export type HistoryView = z.infer<typeof HistoryView>;

export const TokenCreateRequest = z
  .strictObject({ name: noNul(z.string().trim().min(1).max(100)), scopes: z.array(TokenScope).min(1).max(4) })
  .meta({ id: "TokenCreateRequest" });

export const TokenView = z
  .object({
    id: z.uuid(),
    name: z.string(),
    prefix: z.string(),
    scopes: z.array(TokenScope),
    created_at: z.iso.datetime(),
    last_used_at: z.iso.datetime().nullable(),
    revoked_at: z.iso.datetime().nullable(),
  })
  .meta({ id: "Token" });

export const TokenCreated = TokenView.extend({ token: z.string().describe("the secret; shown only now") }).meta({ id: "TokenCreated" });

export const IdParam = z.strictObject({ id: z.uuid({ message: "must be a UUID" }) });

export const QuarantineListQuery = z.strictObject({
  ...Paging.shape,
  channel: z.string().regex(/^[a-z][a-z0-9_-]*$/, "must be a channel name such as telegram").optional(),
});

/** A platform event acknowledged but not storable as a message (`inbound_quarantine`). */
export const QuarantinedEventView = z
  .object({
    id: z.uuid(),
    channel: z.string(),
    account_id: z.string(),
    reason: z.string(),
    /** The event as JSON text, cleaned; cut where it nested too deep, and at 4,000 characters here. */
    raw: z.string(),
    raw_truncated: z.boolean(),
    received_at: z.iso.datetime(),
  })
  .meta({ id: "QuarantinedEvent" });
export type QuarantinedEventView = z.infer<typeof QuarantinedEventView>;

export const QuarantineList = z
  .object({ events: z.array(QuarantinedEventView), total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .meta({ id: "QuarantineList" });
export type QuarantineList = z.infer<typeof QuarantineList>;

/** One loaded plugin (`GET /api/plugins`): what it provides and what its manifest lets it do. */
export const PluginView = z
  .object({
    id: z.string(),
    name: z.string(),
    version: z.string(),
    description: z.string().nullable(),
    /** Shipped with the host rather than named in NAHIDA_PLUGINS. */
    bundled: z.boolean(),
    nahida: z.string().describe("the host versions it runs on (semver range)"),
    sdk: z.string().describe("the plugin API versions it was written for (semver range)"),
    provides: z.object({
      tools: z.array(z.string()),
      commands: z.array(z.string()),
      channels: z.array(z.object({ kind: z.string(), transports: z.array(z.string()) })),
    }),
    permissions: z.object({
      network: z.array(z.string()),
      workspace: z.string(),
      send: z.array(z.string()),
      cron: z.boolean(),
      sessions: z.boolean(),
      chat: z.boolean(),
      ledger: z.string(),
    }),
    config: z.record(z.string(), z.unknown()).nullable().describe("the JSON Schema of its configuration"),
  })
  .meta({ id: "Plugin" });
export type PluginView = z.infer<typeof PluginView>;

export const PluginList = z.object({ plugins: z.array(PluginView) }).meta({ id: "PluginList" });
export type PluginList = z.infer<typeof PluginList>;

/** `POST /api/auth/session`: a browser exchanges an API token for a sign-in cookie. */
export const SignInRequest = z.strictObject({ token: z.string().trim().min(1).max(512) }).meta({ id: "SignInRequest" });

/** A browser's sign-in: who it is, what it may do, and the CSRF token its changes carry. */
export const SignInView = z
  .object({
    token: z.object({ id: z.uuid(), name: z.string(), scopes: z.array(TokenScope) }),
    csrf_token: z.string().describe("send it as X-CSRF-Token with every POST, PUT, PATCH and DELETE made with the cookie"),
    expires_at: z.iso.datetime(),
  })
  .meta({ id: "SignIn" });
export type SignInView = z.infer<typeof SignInView>;
