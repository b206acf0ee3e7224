import type { Intake, IntakeOutcome } from "@nahida/ingress";
import type { Logger } from "@nahida/observability";
import { DEFAULT_MILKY_CHANNEL, normalizeMilkyEvent } from "./milky.normalizer";

export interface MilkyEventHandlerOptions {
  /** The logged-in account (`get_login_info`'s uin): the intake's account id. */
  selfId: number;
  /** The channel instance name. Default `milky`. */
  channel?: string;
  intake: Intake;
}

/**
 * The one path every Milky event takes, from WebSocket, SSE, WebHook or a backfill, into the
 * intake. It resolves only after the message is stored and its lane woken; it rejects on an
 * outage, when the event must be offered again.
 */
export function createMilkyEventHandler(o: MilkyEventHandlerOptions) {
  const channel = o.channel ?? DEFAULT_MILKY_CHANNEL;
  const accountId = String(o.selfId);
  return async function acceptEvent(event: unknown): Promise<IntakeOutcome> {
    return o.intake.offer(channel, accountId, normalizeMilkyEvent(event, { selfId: o.selfId, channel }));
  };
}

export type AcceptMilkyEvent = ReturnType<typeof createMilkyEventHandler>;

/** Logs an event acknowledged without a new message; one that could not be stored as one is in quarantine. */
export function logMilkyEventOutcome(logger: Logger, outcome: IntakeOutcome): void {
  switch (outcome.kind) {
    case "stored":
    case "duplicate":
      return;
    case "ignored":
      logger.debug({ reason: outcome.reason }, "milky event ignored");
      return;
    case "quarantined":
      logger.error({ reason: outcome.reason, quarantineId: outcome.quarantineId }, "milky event cannot be stored as a message; quarantined");
      return;
    default: {
      const unreachable: never = outcome;
      throw new Error(`unknown intake outcome ${JSON.stringify(unreachable)}`);
    }
  }
}
