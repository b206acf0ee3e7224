import { createHash } from "node:crypto";
import { NahidaError, parseChatAddress, type OutboundMessage, type SendRequest } from "@nahida/contracts";
import { DeliveryRepository, Prisma, type Delivery, type PrismaClient } from "@nahida/db";
import type { TypedQueue } from "@nahida/queue";
import { resolveWorkspacePath } from "@nahida/workspace";

export interface SendServiceOptions {
  prisma: PrismaClient;
  outbound: TypedQueue<"outbound">;
  /** Channels the delivery service can send to. */
  channels: string[];
  workspaceDir?: string;
  deliveryTtlMs: number;
}

export interface SendResult {
  delivery: Delivery;
  /** False when an earlier request with the same Idempotency-Key created it. */
  created: boolean;
}

/** Canonical JSON (sorted keys) so that the same body always hashes the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * `POST /api/send`: checks the target channel, attachment paths and session, then writes
 * the delivery (and the session's outbound event) in one transaction and enqueues it.
 * With an Idempotency-Key the unique index on the key decides between concurrent
 * requests, on any replica: one inserts, the others read its row; a different body under
 * the same key is a conflict.
 */
export function createSendService(o: SendServiceOptions) {
  const deliveries = new DeliveryRepository(o.prisma);

  async function validate(request: SendRequest): Promise<void> {
    const address = parseChatAddress(request.target);
    if (!address.ok) throw new NahidaError("invalid_address", address.error.message);
    if (!o.channels.includes(address.value.channel)) {
      throw new NahidaError("not_found", `channel ${JSON.stringify(address.value.channel)} is not registered; registered: ${o.channels.join(", ") || "none"}`);
    }
    for (const [index, attachment] of request.attachments.entries()) {
      if (!o.workspaceDir) throw new NahidaError("bad_request", "attachments need NAHIDA_WORKSPACE_DIR on the server");
      const resolved = await resolveWorkspacePath(o.workspaceDir, attachment.path);
      if (!resolved.ok) throw new NahidaError("bad_request", `attachments.${index}.path: ${resolved.error.message}`);
    }
    if (request.session_id) {
      const session = await o.prisma.session.findUnique({ where: { id: request.session_id }, select: { id: true } });
      if (!session) throw new NahidaError("not_found", `session ${request.session_id} does not exist`);
    }
  }

  return async function send(request: SendRequest, idempotency: { tokenId: string; key: string } | null): Promise<SendResult> {
    await validate(request);
    const requestHash = createHash("sha256").update(canonical(request)).digest("hex");
    // Keys are per token, so two clients cannot collide on "retry-1".
    const idempotencyKey = idempotency ? `${idempotency.tokenId}:${idempotency.key}` : undefined;
    if (idempotencyKey) {
      const existing = await o.prisma.delivery.findUnique({ where: { idempotencyKey } });
      if (existing) return replay(existing, requestHash);
    }
    const message: OutboundMessage = {
      text: request.text,
      ...(request.reply_to ? { replyTo: request.reply_to } : {}),
      attachments: request.attachments.map((a) => ({
        type: a.type,
        path: a.path,
        ...(a.filename ? { filename: a.filename } : {}),
        ...(a.caption ? { caption: a.caption } : {}),
      })),
      extra: {},
    };
    let delivery: Delivery;
    try {
      delivery = await o.prisma.$transaction(async (tx) => {
        const row = await deliveries.create(
          {
            target: request.target,
            message,
            source: "api",
            ...(request.session_id ? { sessionId: request.session_id } : {}),
            expiresAt: new Date(Date.now() + o.deliveryTtlMs),
            ...(idempotencyKey ? { idempotencyKey, requestHash } : {}),
          },
          tx,
        );
        if (request.session_id) {
          // A run commits its turns under this lock; taking it keeps the event from landing
          // between a tool call and its result (the model API would reject that history).
          await tx.$queryRaw`SELECT 1 FROM lanes WHERE key = (SELECT lane_key FROM sessions WHERE id = ${request.session_id}::uuid) FOR UPDATE`;
          await tx.turn.create({
            data: {
              sessionId: request.session_id,
              role: "event",
              content: request.text,
              source: "api",
              metadata: { kind: "outbound", delivery_id: row.id, target: request.target, attachments: message.attachments } as Prisma.InputJsonValue,
            },
          });
        }
        return row;
      });
    } catch (error) {
      // Another replica inserted the same key between our read and our insert.
      if (idempotencyKey && error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002") {
        const existing = await o.prisma.delivery.findUnique({ where: { idempotencyKey } });
        if (existing) return replay(existing, requestHash);
      }
      throw error;
    }
    await o.outbound.add("delivery.send", { deliveryId: delivery.id }, { jobId: delivery.id });
    return { delivery, created: true };
  };

  function replay(existing: Delivery, requestHash: string): SendResult {
    if (existing.requestHash !== requestHash) {
      throw new NahidaError("conflict", "this Idempotency-Key was already used with a different request body");
    }
    return { delivery: existing, created: false };
  }
}

export type SendService = ReturnType<typeof createSendService>;
