import { createHash } from "node:crypto";
import { err, ok, type BackgroundTask, type SubagentSpec } from "@nahida/contracts";
import type { TaskLedger } from "@nahida/tasks";
import { renderForkContext } from "../context/fork-context";
import type { CronJobs } from "@nahida/cron";
import { currentTraceparent } from "@nahida/observability";
import type { Outbox, SessionEvents } from "@nahida/outbox";
import type { ToolOutbox } from "@nahida/plugin-sdk";
import { cronWriteEffect } from "./effects/cron-write.effect";
import { deliverEffect } from "./effects/deliver.effect";
import { recordTurnEffect } from "./effects/record-turn.effect";
import { sendEventEffect } from "./effects/send-event.effect";
import { taskLedgerEffect, taskLedgerState } from "./effects/task-ledger.effect";
import type { Run } from "./run";
import type { HeldEffects } from "./unit-of-work";
import { newRowId } from "@nahida/db";

export interface ToolOutboxOptions {
  outbox: Outbox;
  cronJobs: CronJobs;
  /** Events sent at once to be waited for (`sendEventNow`). */
  sessionEvents: SessionEvents;
  /** Sub-agent tasks and their limits (`spawnTask`). */
  subagents: SubagentLimits & { ledger: TaskLedger };
  /** The loop guard: agent events between sessions chain at most this deep (AGENT_EVENT_MAX_DEPTH). */
  maxEventDepth: number;
}

/** The sub-agent limits a spawn is checked against (docs/subagents.md). */
export interface SubagentLimits {
  /** Children one parent run may start. */
  maxChildren: number;
  /** A child's timeout when its spawn names none. */
  timeoutMs: number;
  /** Characters of the parent's conversation a `fork` child gets. */
  forkChars: number;
  /** Turns of the parent's conversation read for a `fork` child. */
  forkTurns: number;
}

/** Whether a task found under a retried run's spawn id is what this spawn asks for. */
const sameRequest = (task: BackgroundTask, spec: SubagentSpec, timeoutMs: number) =>
  task.task === spec.task &&
  task.timeoutMs === timeoutMs &&
  task.label === (spec.label ?? null) &&
  task.instructions === (spec.instructions ?? null) &&
  task.contextMode === spec.context &&
  JSON.stringify(task.tools) === JSON.stringify(spec.tools ?? null);

/** The n-th call with `key` in this run: a retried run's n-th identical call is the same one. */
function nthCall(run: Run, key: string): string {
  const n = (run.immediateCalls.get(key) ?? 0) + 1;
  run.immediateCalls.set(key, n);
  return derivedId(`${key}|${n}`);
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
export function createToolOutbox(o: ToolOutboxOptions, run: Run, sessionId: string, held: HeldEffects, eventDepth: number): ToolOutbox {
  const source = `agent:${run.id}`;
  // Every event a tool sends is one deeper than the turn that sends it, whoever's tool it is.
  const depth = eventDepth + 1;
  const loopGuard = () =>
    depth > o.maxEventDepth
      ? err({
          code: "forbidden" as const,
          message: `not sent: this turn is already ${eventDepth} agent events deep, and chains stop at ${o.maxEventDepth} (AGENT_EVENT_MAX_DEPTH) so that sessions cannot loop`,
        })
      : null;
  return {
    async send({ target, message, recordIn }) {
      const request = { target, message, source, runId: run.id, deliveryId: newRowId() };
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
      const refused = loopGuard();
      if (refused) return refused;
      const id = newRowId();
      held.emit(sendEventEffect, { ...event, depth, id, source, fromSessionId: sessionId });
      return ok({ eventId: id });
    },
    async sendEventNow(event) {
      const refused = loopGuard();
      if (refused) return refused;
      // Named by the run's first lane item, not the text: a retried run's model may word it
      // differently; its n-th waited-for send to the same session is the same event.
      const id = nthCall(run, `${run.lane.items[0]?.id ?? run.id}|${sessionId}|${event.sessionId}|${event.mode}`);
      const sent = await o.sessionEvents.send({ ...event, depth, id, source, fromSessionId: sessionId });
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
    async spawnTask(spec) {
      const limits = o.subagents;
      // Named by the run's first lane item, like `sendEventNow`: a retried run's n-th spawn finds the child the first attempt started.
      const spawnItem = run.lane.items[0];
      if (!spawnItem) throw new Error(`run ${run.id} has no lane item to name its children by`);
      const first = nthCall(run, `${spawnItem.id}|${sessionId}|spawn`);
      const timeoutMs = spec.timeoutSeconds !== undefined ? spec.timeoutSeconds * 1_000 : limits.timeoutMs;
      const forkContext = spec.context === "fork" ? renderForkContext(await run.conversation(sessionId, limits.forkTurns), limits.forkChars) : null;
      const spawn = (id: string) =>
        limits.ledger.spawn(
          {
            id,
            parentSessionId: sessionId,
            parentLaneKey: run.lane.laneKey,
            spawnItemId: spawnItem.id,
            parentRunId: run.id,
            childSessionId: derivedId(`${id}|child`),
            task: spec.task,
            label: spec.label ?? null,
            instructions: spec.instructions ?? null,
            contextMode: spec.context,
            forkContext,
            tools: spec.tools ?? null,
            timeoutMs,
            traceparent: currentTraceparent(),
          },
          limits.maxChildren,
        );
      let spawned = await spawn(first);
      // A retried run's n-th spawn that asks for something else (the model chose otherwise)
      // is a child of its own; the earlier attempt's, which no run will adopt now, is
      // cancelled at once (nobody told), freeing its slot and its place under the cap.
      if (spawned.ok && !spawned.value.created && !sameRequest(spawned.value.task, spec, timeoutMs)) {
        await limits.ledger.finish([first], { status: "cancelled", error: "its parent's retried turn asked for something else", consumedBy: "discarded" });
        spawned = await spawn(derivedId(`${first}|${JSON.stringify(spec)}`));
      }
      if (spawned.ok) held.emit(taskLedgerEffect, { op: "adopt", ids: [spawned.value.task.id] });
      return spawned;
    },
    takeResults(taskIds) {
      const { taken } = taskLedgerState([...run.uow.values(taskLedgerEffect), ...held.values(taskLedgerEffect)]);
      const fresh = taskIds.filter((id) => !taken.has(id));
      if (fresh.length > 0) held.emit(taskLedgerEffect, { op: "consume", ids: fresh, by: "wait" });
      return fresh;
    },
    yieldForChildren() {
      held.emit(taskLedgerEffect, { op: "yield", sessionId, yieldId: derivedId(`${run.id}|${sessionId}|yield`) });
    },
    async openChildren() {
      const { adopted, taken } = taskLedgerState([...run.uow.values(taskLedgerEffect), ...held.values(taskLedgerEffect)]);
      const tasks = await o.subagents.ledger.tasks.unconsumedOf(sessionId);
      return tasks.filter((t) => t.consumedBy === null && (t.adopted || adopted.has(t.id)) && !taken.has(t.id));
    },
    stopTasks(taskIds) {
      if (taskIds.length > 0) {
        held.emit(taskLedgerEffect, { op: "finish", ids: [...taskIds], outcome: { status: "cancelled", error: "stopped by its parent (agent_stop)", consumedBy: "stopped" } });
      }
    },
  };
}
