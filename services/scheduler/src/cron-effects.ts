import { parseChatAddress, type CronPayload, type OutboundMessage, type Result } from "@nahida/contracts";
import { laneKeyForChat, type CronJob, type SessionRepository, type Tx } from "@nahida/db";
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

/**
 * Writes the effect of one fire of `job` inside the caller's transaction, which also holds
 * the fire's run row: a notify is a delivery through the outbox (source `cron:<job>`), an
 * agent turn a `scheduled_turn` item in the target session's lane. Nothing leaves before
 * the commit; the caller enqueues and wakes after it.
 */
export async function writeCronEffect(
  o: CronEffectsOptions,
  job: CronJob,
  run: { id: string; slot: Date; attempt: number },
  ids: EffectIds,
  tx: Tx,
): Promise<Result<WrittenEffect, string>> {
  const payload = job.payload as CronPayload;
  switch (payload.kind) {
    case "notify": {
      const message: OutboundMessage = {
        text: payload.text,
        attachments: payload.attachments.map((a) => ({ type: a.type, path: a.path, ...(a.filename ? { filename: a.filename } : {}), ...(a.caption ? { caption: a.caption } : {}) })),
        extra: {},
      };
      const request = {
        target: job.target,
        message,
        source: `cron:${job.id}`,
        idempotencyKey: cronDeliveryKey(job.id, run.slot, run.attempt),
        deliveryId: ids.deliveryId,
      };
      // A channel removed since the job was created, or a file gone from the workspace.
      const checked = await o.outbox.check(request, tx);
      if (!checked.ok) return { ok: false, error: checked.error.message };
      const written = await o.outbox.write(request, tx);
      if (!written.ok) return { ok: false, error: written.error.message };
      const { delivery, created } = written.value;
      return { ok: true, value: { deliveryId: delivery.id, dispatch: created ? [delivery.id] : [], lanes: [], sessionId: null } };
    }
    case "agent_turn": {
      const address = parseChatAddress(job.target);
      if (!address.ok) return { ok: false, error: address.error.message };
      const chat = { address: job.target, channel: address.value.channel };
      let laneKey: string;
      let sessionId: string | null = null;
      if (payload.session === "main") laneKey = laneKeyForChat(job.target);
      else laneKey = payload.session === "isolated" ? isolatedLaneKey(job.id, run.id) : namedLaneKey(job.target, payload.session.slice("named:".length));
      // The append locks the lane row, so the session below is created once per lane.
      await o.lanes.append(laneKey, "scheduled_turn", run.id, tx);
      if (payload.session !== "main") {
        const title = payload.session === "isolated" ? `cron ${job.name} @ ${run.slot.toISOString()}` : `cron session ${payload.session.slice(6)}`;
        sessionId = (await o.sessions.ensureLaneSession(laneKey, { ...chat, title }, tx, payload.session === "isolated" ? ids.sessionId : undefined)).id;
      }
      return { ok: true, value: { deliveryId: null, dispatch: [], lanes: [laneKey], sessionId } };
    }
    default: {
      const unreachable: never = payload;
      return { ok: false, error: `unknown payload ${JSON.stringify(unreachable)}` };
    }
  }
}
