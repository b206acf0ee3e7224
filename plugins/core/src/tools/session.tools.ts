import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import {
  AttachmentType,
  ChatType,
  MESSAGE_TARGET_FORMS,
  SessionEventMode,
  historyPageView,
  parseChatAddress,
  parseMessageTarget,
  workspaceAttachment,
  type SessionVisibility,
} from "@nahida/contracts";
import { defineTool, sendPolicyRefusal, type LedgerReader, type ToolContext } from "@nahida/plugin-sdk";
import { Id } from "./tool-args";

export interface SessionToolsOptions {
  events: LedgerReader["events"];
  sessions: LedgerReader["sessions"];
  /** The send policy. */
  policies: LedgerReader["policies"];
  /** A session's recent runs (`session_status`). */
  runs: LedgerReader["runs"];
  turns: LedgerReader["turns"];
  /** The newest checkpoint, marked in `sessions_history`. */
  compactions: LedgerReader["compactions"];
  /** Which sessions a session sees: its own, its own and its children (default), or all. */
  visibility: SessionVisibility;
  /** How often a waiting `sessions_send` looks at its event. */
  pollMs?: number;
}

const VISIBILITY_TEXT: Record<SessionVisibility, string> = {
  self: "only this session",
  tree: "this session and its child sessions",
  all: "every session",
};


const LIST_MAX = 100;
const HISTORY_DEFAULT = 20;
const HISTORY_MAX = 100;
const RECENT_RUNS = 5;
const WAIT_MAX_SECONDS = 60;

/**
 * The cross-session tools (SPEC §4): `message` to any chat, `sessions_list`,
 * `session_status`, `sessions_history`, and `sessions_send`. Every send is checked now
 * (target, visibility, send policy, loop depth) and written through the run's outbox, so a
 * refusal is a tool error the model reads, and a retried run sends nothing twice.
 */
export function sessionTools(o: SessionToolsOptions) {
  const pollMs = o.pollMs ?? 200;

  /** The session, when `context` may see it; otherwise an error that says what is visible. */
  async function visibleSession(context: ToolContext, sessionId: string) {
    const session = (await o.sessions.canSee(context.sessionId, sessionId, o.visibility)) ? await o.sessions.get(sessionId) : null;
    if (!session) throw new Error(`no session ${sessionId} is visible here (visibility: ${VISIBILITY_TEXT[o.visibility]}); sessions_list shows the ids`);
    return session;
  }

  /** Throws the send policy's refusal of a send from `context` into `address` / `sessionId`. */
  async function checkSend(context: ToolContext, address: string | null, sessionId?: string): Promise<void> {
    const refusal = await sendPolicyRefusal(o, context, address, sessionId);
    if (refusal !== null) throw new Error(refusal);
  }

  return [
    defineTool({
      name: "message",
      description:
        `Send a message to another chat (or to this one) now, instead of only replying here. target: ${MESSAGE_TARGET_FORMS}. ` +
        "delivery 'record' also writes it into the target chat's session history. The message leaves once this turn ends; if you sent your answer this way, reply NO_REPLY.",
      parameters: z.object({
        target: z.string().min(1).max(300),
        text: z.string().min(1).max(20_000),
        delivery: z.enum(["notify", "record"]).default("notify"),
        reply_to: z.string().min(1).max(100).optional().describe("platform message id to quote"),
        attachments: z
          .array(z.object({ type: AttachmentType, path: z.string().min(1).max(1_000), filename: z.string().max(255).optional(), caption: z.string().max(1_024).optional() }))
          .max(10)
          .default([]),
      }),
      permitted: (context) => !context.subagent,
      async execute(args, context) {
        const target = parseMessageTarget(args.target);
        if (!target.ok) throw new Error(target.error);
        let address: string;
        let sessionId: string | undefined;
        if (target.value.kind === "session") {
          const session = await visibleSession(context, target.value.sessionId);
          if (!session.chatAddress) throw new Error(`session ${session.id} has no chat to send to; use sessions_send`);
          address = session.chatAddress;
          sessionId = session.id;
        } else {
          address = target.value.raw;
        }
        await checkSend(context, address, sessionId);
        let recordIn: string | undefined;
        if (args.delivery === "record") {
          const chat = await o.sessions.getChat(address);
          recordIn = chat?.currentSessionId ?? undefined;
        }
        const sent = await context.outbox.send({
          target: address,
          message: {
            text: args.text,
            attachments: args.attachments.map(workspaceAttachment),
            extra: {},
            ...(args.reply_to ? { replyTo: args.reply_to } : {}),
          },
          ...(recordIn ? { recordIn } : {}),
        });
        if (!sent.ok) throw new Error(sent.error.message);
        return {
          delivery_id: sent.value.deliveryId,
          target: address,
          status: "queued",
          note: "sent when this turn ends" + (args.delivery === "record" && !recordIn ? "; the chat has no session yet, so nothing was recorded" : ""),
        };
      },
    }),
    defineTool({
      name: "sessions_list",
      description: `List the sessions you can see (${VISIBILITY_TEXT[o.visibility]}), most recently active first.`,
      parameters: z.object({
        kinds: z.array(z.union([ChatType, z.literal("child")])).optional().describe("chat types to include, or 'child' for your child sessions"),
        active_minutes: z.number().int().min(1).max(525_600).optional(),
        limit: z.number().int().min(1).max(LIST_MAX).default(20),
      }),
      async execute(args, context) {
        const rows = await o.sessions.overview(context.sessionId, o.visibility, {
          limit: args.kinds ? LIST_MAX * 5 : args.limit,
          ...(args.active_minutes ? { activeSince: new Date(Date.now() - args.active_minutes * 60_000) } : {}),
        });
        const sessions = rows
          .map((r) => {
            const address = r.target ? parseChatAddress(r.target) : null;
            return {
              session_id: r.sessionId,
              target: r.target,
              channel: r.channel,
              chat_type: address?.ok ? address.value.type : null,
              display_name: r.displayName,
              parent_id: r.parentId,
              has_active_run: r.hasActiveRun,
              queue_depth: r.queueDepth,
              last_active_at: r.lastActiveAt.toISOString(),
            };
          })
          .filter((s) => !args.kinds || args.kinds.some((k) => (k === "child" ? s.parent_id === context.sessionId : s.chat_type === k)))
          .slice(0, args.limit);
        return { sessions };
      },
    }),
    defineTool({
      name: "session_status",
      description: "A session's state: its active run, recent runs, queue depth; with event_id, where an event you sent stands.",
      parameters: z.object({ session_id: Id.optional().describe("default: this session, or the event's"), event_id: Id.optional() }),
      async execute(args, context) {
        const event = args.event_id ? await o.events.state(args.event_id) : null;
        // An event this session sent can be followed in its target without naming it.
        const sentByUs = event !== null && event.event.fromSessionId === context.sessionId;
        const sessionId = args.session_id ?? (event ? event.event.sessionId : context.sessionId);
        const session = sentByUs && sessionId === event.event.sessionId ? await o.sessions.get(sessionId) : await visibleSession(context, sessionId);
        if (!session) throw new Error(`session ${sessionId} no longer exists`);
        const [overview, runs] = await Promise.all([
          o.sessions.overview(session.id, "self", { limit: 1, sessionId: session.id }),
          o.runs.recentRuns(session.laneKey, RECENT_RUNS),
        ]);
        const active = runs.find((r) => r.status === "running");
        return {
          session_id: session.id,
          active_run: active ? { run_id: active.runId, kind: active.kind, status: active.status } : null,
          recent_runs: runs.map((r) => ({ run_id: r.runId, kind: r.kind, status: r.status, started_at: r.startedAt.toISOString(), finished_at: r.finishedAt?.toISOString() ?? null })),
          queue_depth: overview[0]?.queueDepth ?? 0,
          ...(args.event_id
            ? { event: event && event.event.sessionId === session.id ? eventResult(event) : { error: `no event ${args.event_id} in session ${session.id}` } }
            : {}),
        };
      },
    }),
    defineTool({
      name: "sessions_history",
      description: "Read a visible session's history, newest page first (messages cut to 2000 characters; base64, temporary URLs and reasoning removed).",
      parameters: z.object({
        session_id: Id,
        limit: z.number().int().min(1).max(HISTORY_MAX).default(HISTORY_DEFAULT),
        offset: z.number().int().min(0).max(1_000_000).default(0),
      }),
      async execute(args, context) {
        const session = await visibleSession(context, args.session_id);
        const [page, compaction] = await Promise.all([o.turns.page(session.id, args.limit, args.offset), o.compactions.forHistory(session.id)]);
        return historyPageView(page, args.offset, compaction);
      },
    }),
    defineTool({
      name: "sessions_send",
      description:
        "Send an event to another session you can see. mode 'record_only' writes it into that session's history; 'enqueue' (default) also runs a turn there. " +
        `wait_seconds (0-${WAIT_MAX_SECONDS}) waits for that turn's reply; the result's status is recorded, queued, running, done (with reply) or failed — queued or running after the wait means it is still on its way, not lost.`,
      parameters: z.object({
        target_session_id: Id,
        message: z.string().min(1).max(20_000),
        mode: SessionEventMode.default("enqueue"),
        wait_seconds: z.number().int().min(0).max(WAIT_MAX_SECONDS).default(0),
      }),
      permitted: (context) => !context.subagent,
      async execute(args, context) {
        if (args.target_session_id === context.sessionId) throw new Error("that is this session; answer directly instead");
        const session = await visibleSession(context, args.target_session_id);
        await checkSend(context, session.chatAddress, session.id);
        // The outbox refuses an event past the loop guard's depth (AGENT_EVENT_MAX_DEPTH) with the reason.
        const event = { sessionId: session.id, content: args.message, mode: args.mode };
        const sameLane = session.laneKey === context.laneKey;
        if (args.mode === "record_only" || args.wait_seconds === 0 || sameLane) {
          const sent = await context.outbox.sendEvent(event);
          if (!sent.ok) throw new Error(sent.error.message);
          return {
            event_id: sent.value.eventId,
            status: args.mode === "record_only" ? "recorded" : "queued",
            note:
              args.mode === "record_only"
                ? "written into that session's history when this turn ends"
                : `its turn starts after this turn ends${sameLane ? " (it shares this session's lane, so waiting is not possible)" : ""}; session_status with event_id shows its reply`,
          };
        }
        const sent = await context.outbox.sendEventNow(event);
        if (!sent.ok) throw new Error(sent.error.message);
        const deadline = Date.now() + args.wait_seconds * 1_000;
        for (;;) {
          const state = await o.events.state(sent.value.eventId);
          if (!state) throw new Error(`event ${sent.value.eventId} vanished (its session was deleted)`);
          if (state.status === "done" || state.status === "failed" || Date.now() >= deadline) {
            const result = eventResult(state);
            if (state.status === "queued" || state.status === "running") {
              return { ...result, note: `still ${state.status} after ${args.wait_seconds} s; it is not lost: session_status with event_id shows its reply later` };
            }
            return result;
          }
          await sleep(Math.min(pollMs, Math.max(0, deadline - Date.now())), undefined, { signal: context.signal });
        }
      },
    }),
  ];
}

function eventResult(state: NonNullable<Awaited<ReturnType<LedgerReader["events"]["state"]>>>) {
  return {
    event_id: state.event.id,
    status: state.status,
    run_id: state.runId,
    ...(state.status === "done" ? { reply: state.event.reply } : {}),
    ...(state.error ? { error: state.error } : {}),
  };
}
