import type { MessageContext } from "@nahida/contracts";

/** Options for rendering the per-turn envelope. */
export interface EnvelopeOptions {
  /** The bot's IANA time zone (`Asia/Shanghai`, `UTC`); never the host's zone. */
  timeZone: string;
}

/** Renders envelopes for one time zone; built once per bot setting. */
export interface EnvelopeRenderer {
  /** The canonical zone name the renderer resolved (`asia/kolkata` → `Asia/Calcutta`). */
  readonly timeZone: string;
  renderEnvelope(context: MessageContext): string;
  renderUserTurn(context: MessageContext, text: string): string;
}

/** Runs of whitespace, `|`, control characters and line/paragraph separators. */
const SEPARATOR_RUN = /[\s|\p{Cc}\u2028\u2029]+/gu;
const UNSAFE_CHAR = /[|\p{Cc}\u2028\u2029]/u;

/** Shown when a sender has neither a label nor roles, so the field is never blank. */
const UNKNOWN_SENDER = "?";

/**
 * True when `timeZone` is an IANA zone name this runtime's ICU knows (case-insensitive).
 * Bare offsets such as `+08:00` are rejected even where newer runtimes accept them: a fixed
 * offset would silently ignore daylight-saving time.
 */
export function validateTimeZone(timeZone: string): boolean {
  if (typeof timeZone !== "string" || timeZone.trim() === "" || /^[+-]/.test(timeZone)) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Builds a renderer for one time zone.
 * @throws RangeError when `timeZone` is not a valid IANA zone, so a bad bot setting
 *   fails when the renderer is built rather than on the first message.
 */
export function createEnvelopeRenderer(options: EnvelopeOptions): EnvelopeRenderer {
  const { timeZone } = options;
  if (!validateTimeZone(timeZone)) throw new RangeError(`invalid IANA time zone: ${JSON.stringify(timeZone)}`);
  const formatter = new Intl.DateTimeFormat("en-US", {
    timeZone,
    calendar: "gregory",
    numberingSystem: "latn",
    era: "short",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    // h23, not hour12: false, which some ICU versions render as "24" at midnight.
    hourCycle: "h23",
  });
  // A run renders its chat's whole history again (up to AGENT_HISTORY_TURNS turns), and
  // formatToParts is the dearest step: a profile of a burst had it at 0.2 ms per run. The
  // stamp is a function of the timestamp alone, so each is computed once.
  const stamps = new Map<string, string>();
  const stampOf = (timestamp: string): string => {
    let stamp = stamps.get(timestamp);
    if (stamp === undefined) {
      stamp = formatLocalTimestamp(formatter, timestamp);
      if (stamps.size >= MAX_CACHED_STAMPS) stamps.clear();
      stamps.set(timestamp, stamp);
    }
    return stamp;
  };
  const renderEnvelopeWith = (context: MessageContext): string => {
    const stamp = stampOf(context.timestamp);
    const where = `${sanitizeField(context.channel)}/${sanitizeField(context.chatType)}`;
    return `[${stamp} | ${where} | ${senderField(context)}]`;
  };
  return {
    timeZone: formatter.resolvedOptions().timeZone,
    renderEnvelope: renderEnvelopeWith,
    renderUserTurn: (context, text) => `${renderEnvelopeWith(context)}\n${text}`,
  };
}

/** Stamps kept per renderer: the histories of a few hundred busy chats. */
const MAX_CACHED_STAMPS = 20_000;

const renderers = new Map<string, EnvelopeRenderer>();
const MAX_CACHED_RENDERERS = 64;

function rendererFor(options: EnvelopeOptions): EnvelopeRenderer {
  let renderer = renderers.get(options.timeZone);
  if (renderer === undefined) {
    renderer = createEnvelopeRenderer(options);
    // Intl.DateTimeFormat is costly to build; bots use a handful of zones, the bound only guards misuse.
    if (renderers.size >= MAX_CACHED_RENDERERS) renderers.clear();
    renderers.set(options.timeZone, renderer);
  }
  return renderer;
}

/**
 * Renders the envelope line of a user turn, e.g. `[2026-05-10 14:03 +08 | milky/group | Alice admin]`:
 * local time in `options.timeZone` as `YYYY-MM-DD HH:mm` (seconds truncated), the UTC offset
 * (`+08`, `-05`, `+00`, `+05:30`), `channel/chatType`, and the sender label followed by its
 * role tags. `|`, line breaks and other control characters inside a field become one space
 * and fields are trimmed. The chat display name is deliberately not shown.
 * Deterministic: the same context and zone always give the same bytes.
 * @throws RangeError on an invalid time zone or an unparseable timestamp.
 */
export function renderEnvelope(context: MessageContext, options: EnvelopeOptions): string {
  return rendererFor(options).renderEnvelope(context);
}

/** The envelope, a line feed, then the message text unchanged. */
export function renderUserTurn(context: MessageContext, text: string, options: EnvelopeOptions): string {
  return rendererFor(options).renderUserTurn(context, text);
}

/** Replaces each run of `|` / control characters (with the spaces around it) by one space, then trims. */
function sanitizeField(value: string): string {
  return value.replace(SEPARATOR_RUN, (run) => (UNSAFE_CHAR.test(run) ? " " : run)).trim();
}

function senderField(context: MessageContext): string {
  const parts = [context.senderLabel, ...(context.roles ?? [])].map(sanitizeField).filter((part) => part !== "");
  return parts.length === 0 ? UNKNOWN_SENDER : parts.join(" ");
}

function formatLocalTimestamp(formatter: Intl.DateTimeFormat, timestamp: string): string {
  const instantMs = Date.parse(timestamp);
  if (Number.isNaN(instantMs)) throw new RangeError(`invalid timestamp: ${JSON.stringify(timestamp)}`);
  const fields = new Map<string, string>();
  for (const part of formatter.formatToParts(instantMs)) fields.set(part.type, part.value);
  const field = (type: string): number => Number.parseInt(fields.get(type) ?? "", 10);
  const eraYear = field("year");
  const year = fields.get("era") === "BC" ? 1 - eraYear : eraYear;
  const [month, day, hour, minute, second] = [field("month"), field("day"), field("hour"), field("minute"), field("second")];

  // The offset is the local wall clock read as if it were UTC, minus the instant.
  const wall = new Date(0);
  wall.setUTCFullYear(year, month - 1, day);
  wall.setUTCHours(hour, minute, second, 0);
  const instantSeconds = Math.floor(instantMs / 1000);
  const offsetSeconds = Math.round(wall.getTime() / 1000) - instantSeconds;

  const date = `${formatYear(year)}-${pad2(month)}-${pad2(day)}`;
  return `${date} ${pad2(hour)}:${pad2(minute)} ${formatOffset(offsetSeconds)}`;
}

/** `+08`, `-05`, `+00`, `+05:30`, `-03:30`; historic local-mean-time offsets keep their seconds. */
function formatOffset(offsetSeconds: number): string {
  const sign = offsetSeconds < 0 ? "-" : "+";
  const total = Math.abs(offsetSeconds);
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  if (seconds !== 0) return `${sign}${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}`;
  if (minutes !== 0) return `${sign}${pad2(hours)}:${pad2(minutes)}`;
  return `${sign}${pad2(hours)}`;
}

function pad2(value: number): string {
  return String(value).padStart(2, "0");
}

function formatYear(year: number): string {
  return year < 0 ? `-${String(-year).padStart(4, "0")}` : String(year).padStart(4, "0");
}
