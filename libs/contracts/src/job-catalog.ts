import { z } from "zod";
import { ChatAddressString } from "./chat-address";

/**
 * Every queue, its job names, payload schemas and options, shared by producers and
 * consumers (libs/queue builds typed helpers from it). Payloads carry ids; the rows live
 * in Postgres.
 */
export interface JobDefinition<S extends z.ZodType = z.ZodType> {
  schema: S;
  /** Attempts before the job fails for good (BullMQ `attempts`). */
  attempts: number;
  /** Base of the exponential retry backoff. */
  backoffMs: number;
  /** Completed jobs are kept this long (and at most `keepCompletedCount`) for inspection and dedupe by job id. */
  keepCompletedSeconds: number;
  keepCompletedCount: number;
  /** Jobs that failed for good are kept this long; sweepers revive them by id. */
  keepFailedSeconds: number;
}

const HOUR_SECONDS = 3600;

const job = <S extends z.ZodType>(
  schema: S,
  attempts: number,
  backoffMs: number,
  keep: Partial<Pick<JobDefinition, "keepCompletedSeconds" | "keepCompletedCount" | "keepFailedSeconds">> = {},
): JobDefinition<S> => ({
  schema,
  attempts,
  backoffMs,
  keepCompletedSeconds: keep.keepCompletedSeconds ?? HOUR_SECONDS,
  keepCompletedCount: keep.keepCompletedCount ?? 10_000,
  keepFailedSeconds: keep.keepFailedSeconds ?? 7 * 24 * HOUR_SECONDS,
});

const Uuid = z.uuid();

export const jobCatalog = {
  /** Wake-ups for session lanes (docs/lanes.md). The lane state itself lives in Postgres. */
  lanes: {
    "lane.wake": job(z.object({ laneKey: z.string().min(1).max(512) }), 5, 500),
  },
  /** Anyone → delivery: send the stored Delivery row. */
  outbound: {
    "delivery.send": job(z.object({ deliveryId: Uuid }), 8, 1000),
    /**
     * Best effort, no row: a "typing…" indicator while the agent works. Carries the target
     * itself because it is worthless a few seconds later; never retried.
     */
    "chat.action": job(z.object({ target: ChatAddressString, action: z.enum(["typing"]) }), 1, 0, {
      keepCompletedSeconds: 60,
      keepCompletedCount: 1_000,
      keepFailedSeconds: HOUR_SECONDS,
    }),
  },
} as const satisfies Record<string, Record<string, JobDefinition>>;

export type JobCatalog = typeof jobCatalog;
export type QueueName = keyof JobCatalog;
export type JobName<Q extends QueueName> = keyof JobCatalog[Q] & string;
export type JobPayload<Q extends QueueName, N extends JobName<Q>> =
  JobCatalog[Q][N] extends JobDefinition<infer S> ? z.infer<S> : never;
