import { encodeLaneItem, err, ok, parseChatAddress, workspaceAttachment, type OutboundMessage, type Result } from "@nahida/contracts";
import type { StoredCronJob } from "@nahida/cron";
import { laneKeyForChat, type SessionRepository, type Tx } from "@nahida/db";
import type { LaneStore } from "@nahida/lanes";
import type { Outbox } from "@nahida/outbox";

/** What a written effect leaves to do after the commit, and what the run row records. */
export interface WrittenEffect {
  /** The notify's delivery (the one asked for, or the one its idempotency key already named). */
  deliveryId: string | null;
  /** Deliveries to enqueue after the commit. */
  dispatch: string[];
  /** Lanes to wake after the commit. */
  lanes: string[];
  /** The session an agent turn goes to, when it is known now (isolated, named). */
  sessionId: string | null;
}

/** Ids a fire names before its effect is written, so its run row can carry them from the start. */
export interface EffectIds {
  deliveryId: string;
  /** The session an isolated agent turn creates. */
  sessionId: string;
}

export interface CronEffectsOptions {
  outbox: Outbox;
  sessions: SessionRepository;
  lanes: LaneStore;
}

/** A notify's idempotency key: one delivery per (job, slot, attempt), whoever writes it. */
export const cronDeliveryKey = (jobId: string, slot: Date, attempt: number) =>
  `cron:${jobId}:${slot.toISOString()}${attempt > 1 ? `:${attempt}` : ""}`;

/** The lane of a cron job's isolated session for one run, or of a named session of a target. */
export const isolatedLaneKey = (jobId: string, runId: string) => `cron:${jobId}:run:${runId}`;
export const namedLaneKey = (target: string, name: string) => `named:${target}:${name}`;

/** The lane an agent turn of `job` goes to (null for a notify). */
export function laneKeyOf(job: StoredCronJob, runId: string): string | null {
  const { payload, row } = job;
  if (payload.kind === "notify") return null;
  if (payload.kind === "command" || payload.session === "main") return laneKeyForChat(row.target);
  return payload.session === "isolated" ? isolatedLaneKey(row.id, runId) : namedLaneKey(row.target, payload.session.slice("named:".length));
}

/** Why a fire's effect could not be written: its target is not sendable now (a channel removed, a file gone). */
export interface CronEffectError {
  code: "target_refused";
  message: string;
}

/**
 * Writes the effect of one fire of `job` inside the caller's transaction, which also holds
 * the fire's run row: a notify is a delivery through the outbox (source `cron:<job>`), an
 * agent turn a `scheduled_turn` item in the target session's lane. Nothing leaves before
 * the commit; the caller enqueues and wakes after it.
 */
export async function writeCronEffect(
  o: CronEffectsOptions,
  job: StoredCronJob,
  run: { id: string; slot: Date; attempt: number },
  ids: EffectIds,
  expiresAt: Date,
  tx: Tx,
): Promise<Result<WrittenEffect, CronEffectError>> {
  const { payload, row } = job;
  switch (payload.kind) {
    case "notify": {
      const message: OutboundMessage = {
        text: payload.text,
        attachments: payload.attachments.map(workspaceAttachment),
        extra: {},
      };
      const request = {
        target: row.target,
        message,
        source: `cron:${row.id}`,
        idempotencyKey: cronDeliveryKey(row.id, run.slot, run.attempt),
        deliveryId: ids.deliveryId,
        expiresAt,
      };
      // A channel removed since the job was created, or a file gone from the workspace.
      const checked = await o.outbox.check(request, tx);
      if (!checked.ok) return err({ code: "target_refused", message: checked.error.message });
      const written = await o.outbox.write(request, tx);
      if (!written.ok) return err({ code: "target_refused", message: written.error.message });
      const { delivery, created } = written.value;
      return ok({ deliveryId: delivery.id, dispatch: created ? [delivery.id] : [], lanes: [], sessionId: null });
    }
    case "agent_turn":
    case "command": {
      const address = parseChatAddress(row.target);
      if (!address.ok) return err({ code: "target_refused", message: address.error.message });
      const laneKey = laneKeyOf(job, run.id)!;
      // The append locks the lane row, so the session below is created once per lane.
      await o.lanes.append(laneKey, encodeLaneItem({ kind: "scheduled_turn", cronRunId: run.id }), tx);
      let sessionId: string | null = null;
      if (payload.kind === "agent_turn" && payload.session !== "main") {
        const title = payload.session === "isolated" ? `cron ${row.name} @ ${run.slot.toISOString()}` : `cron session ${payload.session.slice("named:".length)}`;
        const chat = { address: row.target, channel: address.value.channel, title };
        sessionId = (await o.sessions.ensureLaneSession(laneKey, chat, tx, payload.session === "isolated" ? ids.sessionId : undefined)).id;
      }
      return ok({ deliveryId: null, dispatch: [], lanes: [laneKey], sessionId });
    }
    default: {
      const unreachable: never = payload;
      return err({ code: "target_refused", message: `unknown payload ${JSON.stringify(unreachable)}` });
    }
  }
}
