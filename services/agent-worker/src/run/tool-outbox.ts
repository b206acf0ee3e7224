import { createHash, randomUUID } from "node:crypto";
import { ok } from "@nahida/contracts";
import type { CronJobs } from "@nahida/cron";
import type { Outbox, SessionEvents } from "@nahida/outbox";
import type { ToolOutbox } from "../agent/tool-registry";
import { cronWriteEffect } from "./effects/cron-write.effect";
import { deliverEffect } from "./effects/deliver.effect";
import { recordTurnEffect } from "./effects/record-turn.effect";
import { sendEventEffect } from "./effects/send-event.effect";
import type { Run } from "./run";
import type { HeldEffects } from "./unit-of-work";

export interface ToolOutboxOptions {
  outbox: Outbox;
  cronJobs: CronJobs;
  /** Events sent at once to be waited for (`sendEventNow`). */
  sessionEvents: SessionEvents;
}

/** A UUID-shaped id derived from `key` (the same key, the same id). */
function derivedId(key: string): string {
  const hex = createHash("sha256").update(key).digest("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The effects the tools of one agent call may have, held apart (`held`) and joining the
 * run's unit of work only when that call returned: a call that was stopped or failed (its
 * turns are not stored either) leaves nothing behind. Each request is checked now, so the
 * model hears about a bad target at once.
 */
export function createToolOutbox(o: ToolOutboxOptions, run: Run, sessionId: string, held: HeldEffects): ToolOutbox {
  const source = `agent:${run.id}`;
  return {
    async send({ target, message, recordIn }) {
      const request = { target, message, source, runId: run.id, deliveryId: randomUUID() };
      const checked = await o.outbox.check(request);
      if (!checked.ok) return checked;
      held.emit(deliverEffect, request);
      if (recordIn) {
        held.emit(recordTurnEffect, {
          sessionId: recordIn,
          turn: {
            role: "event",
            content: message.text,
            source,
            runId: run.id,
            metadata: { kind: "cross_session_message", delivery_id: request.deliveryId, target, from_session_id: sessionId },
          },
        });
      }
      return ok({ deliveryId: request.deliveryId });
    },
    async sendEvent(event) {
      const id = randomUUID();
      held.emit(sendEventEffect, { ...event, id, source, fromSessionId: sessionId });
      return ok({ eventId: id });
    },
    async sendEventNow(event) {
      // Named by the run's first lane item, not the text: a retried run's model may word it
      // differently; its n-th waited-for send to the same session is the same event.
      const key = `${run.lane.items[0]?.id ?? run.id}|${sessionId}|${event.sessionId}|${event.mode}`;
      const n = (run.immediateCalls.get(key) ?? 0) + 1;
      run.immediateCalls.set(key, n);
      const id = derivedId(`${key}|${n}`);
      const sent = await o.sessionEvents.send({ ...event, id, source, fromSessionId: sessionId });
      return sent.ok ? ok({ eventId: id }) : sent;
    },
    async createCron(request) {
      const owner = `session:${sessionId}`;
      const prepared = o.cronJobs.prepare(request, owner);
      if (!prepared.ok) return prepared;
      if (prepared.value.enabled) {
        const room = await o.cronJobs.checkRoom(prepared.value.target);
        if (!room.ok) return room;
      }
      const jobId = prepared.value.id!;
      held.emit(cronWriteEffect, { kind: "create", jobId, request, owner });
      return ok({ jobId, nextRunAt: prepared.value.nextRunAt });
    },
    async updateCron(jobId, request) {
      const checked = await o.cronJobs.checkUpdate(jobId, request);
      if (!checked.ok) return checked;
      held.emit(cronWriteEffect, { kind: "update", jobId, request });
      return ok(undefined);
    },
    async deleteCron(jobId) {
      const checked = await o.cronJobs.checkDelete(jobId);
      if (!checked.ok) return checked;
      held.emit(cronWriteEffect, { kind: "delete", jobId });
      return ok(undefined);
    },
  };
}
