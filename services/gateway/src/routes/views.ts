import { type CronJobView, type CronRunView, type DeliveryView, type SessionEventMode, type SessionEventView, type SessionView, type TokenScope } from "@nahida/contracts";
import type { ApiToken, CronJob, CronRun, Delivery, Session, SessionEventState } from "@nahida/db";

/** Database rows → API representations (snake_case, ISO timestamps, no internals). */
export const deliveryView = (d: Delivery): DeliveryView => ({
  id: d.id,
  target: d.target,
  status: d.status as DeliveryView["status"],
  attempts: d.attempts,
  platform_message_ids: d.platformMessageIds,
  delivery_policy: d.policy as DeliveryView["delivery_policy"],
  uncertain: d.uncertainParts.length > 0,
  uncertain_parts: d.uncertainParts,
  ...(d.error && d.status !== "sent" ? { error: d.error } : {}),
  source: d.source,
  created_at: d.createdAt.toISOString(),
  ...(d.sentAt ? { sent_at: d.sentAt.toISOString() } : {}),
});

export const sessionView = (s: Session): SessionView => ({
  id: s.id,
  chat_address: s.chatAddress,
  channel: s.channel,
  status: s.status,
  title: s.title,
  parent_id: s.parentId,
  created_at: s.createdAt.toISOString(),
  last_activity_at: s.lastActivityAt.toISOString(),
});

export const sessionEventView = ({ event, status, runId, error }: SessionEventState): SessionEventView => ({
  event_id: event.id,
  session_id: event.sessionId,
  mode: event.mode as SessionEventMode,
  status,
  source: event.source,
  run_id: runId,
  reply: event.reply,
  error,
  created_at: event.createdAt.toISOString(),
  finished_at: event.finishedAt?.toISOString() ?? null,
});

export const tokenView = (t: ApiToken) => ({
  id: t.id,
  name: t.name,
  prefix: t.prefix,
  scopes: t.scopes as TokenScope[],
  created_at: t.createdAt.toISOString(),
  last_used_at: t.lastUsedAt?.toISOString() ?? null,
  revoked_at: t.revokedAt?.toISOString() ?? null,
});

export const cronRunView = (r: CronRun): CronRunView => ({
  id: r.id,
  job_id: r.jobId,
  slot: r.slot.toISOString(),
  status: r.status as CronRunView["status"],
  manual: r.manual,
  attempt: r.attempt,
  error: r.error,
  delivery_ids: r.deliveryIds,
  session_id: r.sessionId,
  created_at: r.createdAt.toISOString(),
  finished_at: r.finishedAt?.toISOString() ?? null,
});

export const cronJobView = (j: CronJob, lastRun?: CronRun | null): CronJobView => ({
  id: j.id,
  name: j.name,
  schedule: j.schedule as CronJobView["schedule"],
  tz: j.tz,
  target: j.target,
  payload: j.payload as CronJobView["payload"],
  enabled: j.enabled,
  missed: j.missed as CronJobView["missed"],
  catchup_window_ms: j.catchupWindowMs,
  max_runs: j.maxRuns,
  end_at: j.endAt?.toISOString() ?? null,
  delete_after_run: j.deleteAfterRun,
  jitter_ms: j.jitterMs,
  owner: j.owner,
  run_count: j.runCount,
  consecutive_failures: j.consecutiveFailures,
  disabled_reason: j.disabledReason,
  next_run_at: j.enabled ? (j.nextRunAt?.toISOString() ?? null) : null,
  created_at: j.createdAt.toISOString(),
  updated_at: j.updatedAt.toISOString(),
  ...(lastRun !== undefined ? { last_run: lastRun ? cronRunView(lastRun) : null } : {}),
});
