import { createHash } from "node:crypto";
import { err, ok, parseChatAddress, type Clock, type OutboundEventMetadata, type DeliveryPolicy, type ErrorCode, type OutboundMessage, type Result } from "@nahida/contracts";
import { newRowId, type Delivery, type DeliveryRepository, type FencedPart, type SessionRepository, type TurnRepository, type Tx } from "@nahida/db";
import type { TypedQueue } from "@nahida/queue";
import { resolveWorkspacePath } from "@nahida/workspace";

/** One message to send. */
export interface OutboxRequest {
  /** Typed ChatAddress. */
  target: string;
  message: OutboundMessage;
  /** Who sends it: `agent`, `command`, `api`, `agent:<run_id>`, `cron:<job>`. */
  source: string;
  /** The session the message belongs to (a run's reply, or the session to record it in). */
  sessionId?: string;
  /**
   * Also write the message into `sessionId`'s history as an outbound event (role `event`),
   * under that session's lane lock, so the agent knows what was said in its chat.
   */
  recordEvent?: boolean;
  inboundMessageId?: string;
  runId?: string;
  /** Repeating a request with the same key returns the first delivery and sends once. */
  idempotencyKey?: string;
  /**
   * What "the same request" means for the key: a hash of the caller's own request (the
   * gateway hashes the request body). Default: a hash of target, message and session.
   */
  requestHash?: string;
  /** The row's id, for callers that name the delivery before their transaction commits. */
  deliveryId?: string;
  /** Default: now + the outbox's TTL. A delivery still queued after it expires. */
  expiresAt?: Date;
  /** Default `at_least_once`: a part of unknown outcome is sent again. */
  policy?: DeliveryPolicy;
}

export interface OutboxError {
  code: Extract<ErrorCode, "invalid_address" | "not_found" | "bad_request" | "conflict">;
  message: string;
}

export interface OutboxSent {
  delivery: Delivery;
  /** False when an earlier request with the same idempotency key created it. */
  created: boolean;
}

export interface OutboxOptions {
  deliveries: DeliveryRepository;
  sessions: SessionRepository;
  turns: TurnRepository;
  /** Runs `fn` in one database transaction. */
  transaction: <T>(fn: (tx: Tx) => Promise<T>) => Promise<T>;
  queue: TypedQueue<"outbound">;
  /** Channel instances the delivery service can send to. */
  channels: readonly string[];
  /** Attachment paths resolve inside it; without it, path attachments are refused. */
  workspaceDir?: string;
  /** A delivery still queued after this long expires instead of arriving late. */
  deliveryTtlMs: number;
  clock: Clock;
}

/** Canonical JSON (sorted keys, undefined dropped): the same request always hashes the same. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object" && !(value instanceof Date)) {
    return `{${Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}

/** sha256 of a request's canonical JSON: what "the same request" means for an idempotency key. */
export const hashRequest = (value: unknown): string => createHash("sha256").update(canonicalJson(value)).digest("hex");

const requestHash = (r: OutboxRequest) =>
  r.requestHash ?? hashRequest({ target: r.target, message: r.message, sessionId: r.sessionId, recordEvent: r.recordEvent ?? false, policy: r.policy });

/**
 * The one outbound path (the outbox pattern): every producer — the gateway, a run's replies
 * and tools, the scheduler — writes its delivery rows here, in its own transaction, and the
 * `outbound/delivery.send` job that names the row is added only after that commit. A row
 * without a job (a crash in between) is found by the delivery sweeper.
 */
export class Outbox {
  constructor(private readonly o: OutboxOptions) {}

  /** Address, channel, attachments and session: everything a request can be refused for. */
  async check(request: OutboxRequest, tx?: Tx): Promise<Result<void, OutboxError>> {
    const address = parseChatAddress(request.target);
    if (!address.ok) return err({ code: "invalid_address", message: address.error.message });
    if (!this.o.channels.includes(address.value.channel)) {
      return err({
        code: "not_found",
        message: `channel ${JSON.stringify(address.value.channel)} is not registered; registered: ${this.o.channels.join(", ") || "none"}`,
      });
    }
    for (const [index, attachment] of request.message.attachments.entries()) {
      if (attachment.path === undefined) continue;
      if (!this.o.workspaceDir) return err({ code: "bad_request", message: "attachments need NAHIDA_WORKSPACE_DIR on the server" });
      const resolved = await resolveWorkspacePath(this.o.workspaceDir, attachment.path);
      if (!resolved.ok) return err({ code: "bad_request", message: `attachments.${index}.path: ${resolved.error.message}` });
    }
    if (request.recordEvent && !request.sessionId) return err({ code: "bad_request", message: "recording an event needs a session" });
    if (request.recordEvent && request.sessionId && !(await this.o.sessions.get(request.sessionId, tx))) {
      return err({ code: "not_found", message: `session ${request.sessionId} does not exist` });
    }
    return ok(undefined);
  }

  /**
   * Checks and writes a delivery. Without `tx` it commits on its own and enqueues at once.
   * With `tx` the row is part of the caller's transaction: call {@link dispatch} with its id
   * after that transaction commits (a job added before could find no row).
   */
  async send(request: OutboxRequest, tx?: Tx): Promise<Result<OutboxSent, OutboxError>> {
    const checked = await this.check(request, tx);
    if (!checked.ok) return checked;
    if (tx) return this.write(request, tx);
    if (request.idempotencyKey) {
      // The common retry finds the row without opening a transaction.
      const existing = await this.o.deliveries.findByIdempotencyKey(request.idempotencyKey);
      if (existing) return this.replay(existing, request);
    }
    // A lone insert is atomic by itself; only the session event needs a transaction with it.
    const written = request.recordEvent ? await this.o.transaction((t) => this.write(request, t)) : await this.write(request);
    if (written.ok && written.value.created) await this.dispatch([written.value.delivery.id]);
    return written;
  }

  /**
   * Writes a request that was checked before (a run checks a tool's send when the tool
   * calls, and writes it in the run's fenced commit). Returns a conflict when the
   * idempotency key was used with another request.
   */
  async write(request: OutboxRequest, tx?: Tx): Promise<Result<OutboxSent, OutboxError>> {
    const input = this.row(request);
    // The lane lock first, as a run's fenced commit takes it first: the other order could
    // deadlock with a commit that holds the lane and inserts the same key.
    const eventTx = request.recordEvent && request.sessionId ? tx : undefined;
    if (request.recordEvent && request.sessionId && !eventTx) throw new Error("recording an event needs a transaction");
    if (eventTx && request.sessionId && !(await this.o.sessions.lockLaneOf(request.sessionId, eventTx))) {
      return err({ code: "not_found", message: `session ${request.sessionId} does not exist` });
    }
    let sent: OutboxSent;
    if (request.idempotencyKey) {
      sent = await this.o.deliveries.createOnce({ ...input, idempotencyKey: request.idempotencyKey, requestHash: requestHash(request) }, tx);
      if (!sent.created) return this.replay(sent.delivery, request);
    } else {
      sent = { delivery: await this.o.deliveries.create(input, tx), created: true };
    }
    if (eventTx && request.sessionId) {
      await this.o.turns.append(
        request.sessionId,
        [
          {
            role: "event",
            content: request.message.text,
            source: request.source,
            metadata: { kind: "outbound", delivery_id: sent.delivery.id, target: request.target, attachments: request.message.attachments } satisfies OutboundEventMetadata,
            ...(request.runId ? { runId: request.runId } : {}),
          },
        ],
        eventTx,
      );
    }
    return ok(sent);
  }

  /**
   * `write` for checked requests as a part of a run's one-statement commit, when none needs
   * more than its row (no idempotency key, no session event); null otherwise, and the caller
   * writes them one by one in a transaction. Every request must carry its `deliveryId`.
   */
  writePart(requests: readonly OutboxRequest[]): FencedPart | null {
    if (requests.some((r) => r.idempotencyKey !== undefined || r.recordEvent || r.deliveryId === undefined)) return null;
    return this.o.deliveries.createPart(requests.map((r) => this.row(r)));
  }

  private row(request: OutboxRequest) {
    return {
      id: request.deliveryId ?? newRowId(),
      target: request.target,
      message: request.message,
      source: request.source,
      ...(request.sessionId ? { sessionId: request.sessionId } : {}),
      ...(request.inboundMessageId ? { inboundMessageId: request.inboundMessageId } : {}),
      ...(request.runId ? { runId: request.runId } : {}),
      expiresAt: request.expiresAt ?? new Date(this.o.clock.now().getTime() + this.o.deliveryTtlMs),
      ...(request.policy ? { policy: request.policy } : {}),
    };
  }

  /**
   * Enqueues the send jobs of committed rows, in one round trip; the job id is the row id,
   * so a repeat is harmless.
   */
  async dispatch(deliveryIds: readonly string[]): Promise<void> {
    if (deliveryIds.length === 1) await this.o.queue.add("delivery.send", { deliveryId: deliveryIds[0]! }, { jobId: deliveryIds[0]! });
    else await this.o.queue.addBulk(deliveryIds.map((deliveryId) => ({ name: "delivery.send" as const, payload: { deliveryId }, options: { jobId: deliveryId } })));
  }

  /**
   * One more attempt for a failed or expired delivery, on the same row: it goes back to
   * `queued` with a fresh TTL (once, however many callers race; see
   * {@link DeliveryRepository.requeue}) and its job is revived. Parts the platform accepted
   * before are not sent again. A job still finishing its last attempt (the row was failed
   * a moment ago) is left alone; the delivery sweeper revives it once it has failed.
   */
  async retry(deliveryId: string): Promise<Result<Delivery, OutboxError>> {
    const expiresAt = new Date(this.o.clock.now().getTime() + this.o.deliveryTtlMs);
    const requeued = await this.o.deliveries.requeue(deliveryId, expiresAt);
    switch (requeued.kind) {
      case "missing":
        return err({ code: "not_found", message: `delivery ${deliveryId} does not exist` });
      case "not_retryable":
        return err({ code: "conflict", message: `delivery ${deliveryId} is ${requeued.delivery.status}; only a failed or expired one can be retried` });
      case "requeued":
        // The job id is the row id, and the old job is kept (completed or failed): adding
        // it again would be a no-op, so it is revived instead.
        // A failed enqueue (Redis away) loses nothing: the row is queued, and the delivery
        // sweeper re-adds its job once it has waited `staleDeliveryMs`.
        await this.o.queue.addOrRevive("delivery.send", { deliveryId }, deliveryId).catch(() => undefined);
        return ok(requeued.delivery);
    }
  }

  private replay(existing: Delivery, request: OutboxRequest): Result<OutboxSent, OutboxError> {
    if (existing.requestHash !== requestHash(request)) {
      return err({ code: "conflict", message: "this Idempotency-Key was already used with a different request body" });
    }
    return ok({ delivery: existing, created: false });
  }
}
