import type { Cluster, Redis } from "ioredis";
import { isTerminalTask } from "@nahida/contracts";
import type { CronJobs } from "@nahida/cron";
import type { BackgroundTaskRepository, CronRepository } from "@nahida/db";
import { stoppedKey } from "./agent-call";
import { withoutChanges, type ChatCronJobs, type CommandContext } from "@nahida/plugin-sdk";
import type { CommandRouter } from "../commands/command-router";
import { cronWriteEffect } from "./effects/cron-write.effect";
import { taskLedgerEffect } from "./effects/task-ledger.effect";
import type { Compactor } from "../compaction/compactor";
import type { Run } from "./run";

export interface ChatCommandsOptions {
  commands: CommandRouter<CommandContext>;
  /** Reads the chat's cron jobs for `/cron`. */
  cron: CronRepository;
  /** Checks the changes `/cron` makes; they are written in the run's commit. */
  cronJobs: CronJobs;
  /** Reads the mark a stopped run left (`/stop`). */
  redis: Redis | Cluster;
  prefix: string;
  model: string | null;
  /** The session's sub-agents, which `/stop` ends. */
  tasks: BackgroundTaskRepository;
  /** `/compact`; none without a language model. */
  compactor?: Compactor;
}

/** Jobs `/cron list` shows. */
const CRON_LIST_LIMIT = 50;

/** `/cron` over the run's chat: reads now, changes in the commit. */
function chatCron(o: ChatCommandsOptions, run: Run, chatAddress: string): ChatCronJobs {
  return {
    list: async () => (await o.cron.list({ target: chatAddress, limit: CRON_LIST_LIMIT, offset: 0 })).jobs,
    find: async (idOrPrefix) => {
      if (idOrPrefix.length < 4) return null;
      const matches = await o.cron.findByIdPrefix(chatAddress, idOrPrefix, 2);
      return matches.length === 1 ? matches[0]! : null;
    },
    remove: async (jobId) => {
      const checked = await o.cronJobs.checkDelete(jobId);
      if (!checked.ok) return checked.error.message;
      run.uow.emit(cronWriteEffect, { kind: "delete", jobId });
      return null;
    },
    setEnabled: async (jobId, enabled) => {
      const checked = await o.cronJobs.checkUpdate(jobId, { enabled });
      if (!checked.ok) return checked.error.message;
      run.uow.emit(cronWriteEffect, { kind: "update", jobId, request: { enabled } });
      return null;
    },
  };
}

/**
 * What a command sent in the run's chat sees and changes; every change goes into the run's
 * unit of work. `senderRoles`: the sender's role tags in the chat (none for a cron job's command).
 */
export function commandContext(o: ChatCommandsOptions, run: Run, senderRoles: readonly string[], stoppedHere = false): CommandContext {
  const chat = run.scope.chat;
  if (!chat) throw new Error(`a command reached session ${run.scope.session.id}, which has no chat`);
  return {
    chatAddress: chat.address,
    chatType: chat.type,
    channel: chat.channel,
    sessionId: run.sessionId,
    triggerMode: run.triggerMode,
    queueMode: run.queueMode,
    senderRoles: [...senderRoles],
    model: o.model,
    turnCount: () => run.turnCount(run.sessionId),
    rotateSession: () => run.rotateSession(),
    clearHistory: () => run.clearHistory(run.sessionId),
    setTriggerMode: (value) => run.changeSetting({ setting: "trigger_mode", value }),
    sendOverride: run.sendOverride,
    setSendOverride: (value) => run.changeSetting({ setting: "send_override", value }),
    setQueueMode: (value) => run.changeSetting({ setting: "queue_mode", value }),
    // Stopped: a run in progress (its mark), or messages before this /stop in its own batch.
    consumeStopped: async () => (await o.redis.getdel(stoppedKey(o.prefix, run.lane.laneKey))) !== null || stoppedHere,
    stopSubagents: async () => {
      // Every session of the chat (a `/new` leaves the old one's children running), and the
      // results that ended but were not told yet: after a /stop nothing of them speaks.
      const untaken = await o.tasks.untakenOfLane(run.lane.laneKey);
      const open = untaken.filter((t) => !isTerminalTask(t.status)).map((t) => t.id);
      const ended = untaken.filter((t) => isTerminalTask(t.status)).map((t) => t.id);
      if (open.length > 0) {
        run.uow.emit(taskLedgerEffect, { op: "finish", ids: open, outcome: { status: "cancelled", error: "stopped by /stop in its parent's chat", consumedBy: "stopped" } });
      }
      if (ended.length > 0) run.uow.emit(taskLedgerEffect, { op: "consume", ids: ended, by: "stopped" });
      return open.length;
    },
    commandList: () => o.commands.list(),
    compact: async () => {
      if (!o.compactor) return "No language model is configured, so there is nothing to summarize with.";
      const done = await o.compactor.compactNow(run, run.sessionId);
      return done.ok
        ? `Summarized ${done.coveredTurns} earlier turns; the conversation now takes about ${done.tokensAfter} tokens of the model's window instead of ${done.tokensBefore}. Nothing is deleted.`
        : `Nothing compacted: ${done.reason}.`;
    },
    cron: chatCron(o, run, chat.address),
  };
}

/**
 * What a cron job's command sees: the chat's context as nobody (no sender roles), and
 * nothing of the chat may change: a schedule someone (or the model) set up must not reset a
 * session, flip a mode or `/send off`, stop a reply or edit cron jobs. A change throws, and
 * the cron run fails with the reason.
 */
export function scheduledCommandContext(o: ChatCommandsOptions, run: Run): CommandContext {
  return withoutChanges(commandContext(o, run, []), (what) => `a scheduled job cannot ${what}`, { chat: true, cron: true });
}
