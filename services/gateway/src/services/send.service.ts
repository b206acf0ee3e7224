import { NahidaError, workspaceAttachment, type OutboundMessage, type SendRequest } from "@nahida/contracts";
import type { Delivery } from "@nahida/db";
import { hashRequest, type Outbox } from "@nahida/outbox";

export interface SendResult {
  delivery: Delivery;
  /** False when an earlier request with the same Idempotency-Key created it. */
  created: boolean;
}

/**
 * `POST /api/send` on top of the outbox: the outbox checks the target channel, attachment
 * paths and session, writes the delivery (and the session's outbound event) in one
 * transaction and enqueues it. Idempotency-Keys are scoped to the token, so two clients
 * cannot collide on "retry-1"; the same key with another body is a conflict.
 */
export function createSendService(o: { outbox: Outbox }) {
  return async function send(request: SendRequest, idempotency: { tokenId: string; key: string } | null): Promise<SendResult> {
    const message: OutboundMessage = {
      text: request.text,
      ...(request.reply_to ? { replyTo: request.reply_to } : {}),
      attachments: request.attachments.map(workspaceAttachment),
      extra: {},
    };
    const sent = await o.outbox.send({
      target: request.target,
      message,
      source: "api",
      ...(request.delivery_policy ? { policy: request.delivery_policy } : {}),
      ...(request.session_id ? { sessionId: request.session_id, recordEvent: true } : {}),
      // The body's hash, as before the outbox existed: a retry across an upgrade still replays.
      ...(idempotency
        ? { idempotencyKey: `${idempotency.tokenId}:${idempotency.key}`, requestHash: hashRequest(request) }
        : {}),
    });
    if (!sent.ok) throw new NahidaError(sent.error.code, sent.error.message);
    return sent.value;
  };
}

export type SendService = ReturnType<typeof createSendService>;
