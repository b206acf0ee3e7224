import type { FastifyPluginAsync } from "fastify";
import type { Cluster, Redis } from "ioredis";
import type { z } from "zod";
import type { ChatTranscriptEntry, Readiness } from "@nahida/contracts";
import type { Intake } from "@nahida/ingress";
import type { Logger } from "@nahida/observability";
import type { ChannelSender } from "./channel-sender";

/** One configured account of a channel kind, such as the Telegram bot `support`. */
export interface ChannelInstance<Config = unknown> {
  /** The ChatAddress channel of this account's chats, and the sender's `channel`. */
  readonly name: string;
  /** The {@link ChannelModule.kind} that runs it. */
  readonly kind: string;
  /** What the module's `envSchema` made of this instance's variables. */
  readonly config: Config;
}

export interface ChannelSenderDeps {
  /** Attachments given as paths are resolved inside this directory. */
  workspaceDir?: string;
  /** The shared Redis, for a channel whose platform is Nahida's own (the web chat publishes answers through it). */
  redis: Redis | Cluster;
  /** Queue prefix; namespaces what the sender keeps or publishes in Redis. */
  prefix: string;
}

export interface ChannelIngressDeps {
  /** Every inbound event is stored and enqueued through it. */
  intake: Intake;
  redis: Redis | Cluster;
  /** Queue prefix; namespaces whatever the ingress keeps in Redis (locks, offsets). */
  prefix: string;
  logger: Logger;
  /** Largest request body a listener of the ingress (a webhook) accepts; larger ones get 413. */
  bodyLimitBytes: number;
  /**
   * TTL of a leadership the ingress holds in Redis (one platform connection per account
   * across replicas): a dead holder is replaced within about this long.
   */
  leadershipTtlMs: number;
}

export interface RunningChannelIngress {
  /** Stops taking platform events; resolves once the ones in flight are stored. */
  stop(): Promise<void>;
  /**
   * Ready when it takes the platform's events: it holds its connection (a long poll, an
   * event stream, a listening webhook), or knows another replica holds it. Without it, a
   * started ingress counts as ready.
   */
  readiness?(): Promise<Readiness>;
  /** Fields for the start log line (account, mode, listen address); never a secret. */
  describe?: Record<string, string | number | undefined>;
}

/** Reads a chat's recent messages from the ledger, oldest first. */
export type ChatTranscript = (chatAddress: string, limit: number) => Promise<ChatTranscriptEntry[]>;

/** What a channel's routes on the gateway are given. */
export interface ChannelRouteDeps {
  /** Every inbound event is stored and enqueued through it. */
  intake: Intake;
  /** The shared Redis (rate limits, publishing). */
  redis: Redis | Cluster;
  /** A new Redis connection for a subscriber (pub/sub holds its connection); closed by the launcher. */
  createSubscriber(purpose: string): Redis | Cluster;
  /** Queue prefix; namespaces what the routes keep in Redis. */
  prefix: string;
  /** The chat's recent messages, for a page that shows a conversation. */
  transcript: ChatTranscript;
  logger: Logger;
}

/**
 * A channel the gateway itself serves (the web chat): its routes are mounted on the
 * gateway's server, which also serves WebSocket routes (`@fastify/websocket`: a route with
 * `websocket: true`). Every gateway replica serves them.
 */
export interface ChannelRoutes {
  /** Mounted at the gateway's root; paths are the routes' own. */
  plugin: FastifyPluginAsync;
  /** Where a person opens it, for the start log line (`/chat`). */
  path: string;
}

/** A configuration problem the launcher reports with the others, one line per variable. */
export interface ChannelConfigIssue {
  /** The variable as the operator sets it, as named by the `variable` callback. */
  variable: string;
  message: string;
}

/**
 * A startup failure that one variable explains (a token the platform rejects, an
 * unreachable API root). `variable` is the module's own name, without the instance prefix.
 */
export class ChannelStartError extends Error {
  override name = "ChannelStartError";
  constructor(
    readonly variable: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Whether `error` is a ChannelStartError, by its shape: a plugin loaded beside the built
 * host (through tsx) has its own copy of this class, which `instanceof` would not match.
 */
export const isChannelStartError = (error: unknown): error is ChannelStartError =>
  error instanceof Error && error.name === "ChannelStartError" && typeof (error as { variable?: unknown }).variable === "string";

/**
 * A channel kind (port): what the launcher needs to configure, send through and run the
 * ingress of any number of its instances. Adding a channel is one module, registered by a
 * plugin (docs/plugins.md).
 */
export interface ChannelModule<Config = unknown> {
  /** `telegram`; the launcher runs the ingress of every instance of this kind as `ingress-<kind>`. */
  readonly kind: string;
  /** The instance name used when the operator names none; its variables are today's `<KIND>_*`. */
  readonly defaultInstance: string;
  /**
   * The module's variables without the instance prefix (`BOT_TOKEN`, `MODE`); the launcher
   * reads them as `<INSTANCE>_BOT_TOKEN`. Paths of issues must be those variable names.
   */
  readonly envSchema: z.ZodType<Config>;
  /** The variable an instance cannot run without; its presence alone turns the default instance on. */
  readonly requiredVariable: string;
  /**
   * Rules the schema of one instance cannot express: across variables (a webhook needs its
   * secret) or across instances (two bots cannot share a port or a token).
   */
  validate?(instances: readonly ChannelInstance<Config>[], variable: (instance: ChannelInstance<Config>, name: string) => string): ChannelConfigIssue[];
  /** The sender of one instance; its `channel` must be `instance.name`. */
  createSender(instance: ChannelInstance<Config>, deps: ChannelSenderDeps): ChannelSender;
  /**
   * Starts taking the instance's platform events; rejects with a {@link ChannelStartError}
   * when a variable is to blame. A kind without it has no `ingress-<kind>` service: its
   * events come in through {@link gatewayRoutes}.
   */
  startIngress?(instance: ChannelInstance<Config>, deps: ChannelIngressDeps): Promise<RunningChannelIngress>;
  /** Routes the gateway serves for the instance (a page, a WebSocket), on every replica. */
  gatewayRoutes?(instance: ChannelInstance<Config>, deps: ChannelRouteDeps): ChannelRoutes;
}
