import { parseArgs } from "node:util";
import type { z } from "zod";
import type { CronCreateRequest, CronUpdateRequest } from "@nahida/contracts";
import type { ApiRequest } from "./api.client";
import { UsageError } from "./usage-error";
import { idArgument, wholeNumber } from "./cli-args";

export const CRON_USAGE = `  cron create --name NAME --target ADDRESS (--cron EXPR [--tz ZONE] | --every DURATION | --at ISO)
              (--text TEXT | --prompt TEXT [--session main|isolated|named:KEY] [--no-deliver]
               | --command "/NAME ARGS" [--no-deliver])
              [--missed skip|run_once] [--max-runs N] [--end-at ISO] [--jitter DURATION] [--disabled]
                                  schedule a notification, an agent turn or a chat command
                                  (DURATION: 90s, 5m, 2h, 1d or ms)
  cron list [--target ADDRESS] [--enabled true|false]
  cron get <id>                   a job with its next and last run
  cron update <id> [the create options; --enabled / --disabled]
  cron delete <id>
  cron run <id>                   fire now (the schedule does not move)
  cron runs <id> [--limit N]      the job's runs, newest first`;

const jobOptions = {
  name: { type: "string" },
  target: { type: "string" },
  cron: { type: "string" },
  tz: { type: "string" },
  every: { type: "string" },
  at: { type: "string" },
  text: { type: "string" },
  prompt: { type: "string" },
  command: { type: "string" },
  session: { type: "string" },
  "no-deliver": { type: "boolean" },
  missed: { type: "string" },
  "max-runs": { type: "string" },
  "end-at": { type: "string" },
  jitter: { type: "string" },
  enabled: { type: "boolean" },
  disabled: { type: "boolean" },
} as const;

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `5m`, `2h`, `1d`, `1500ms` or a bare number of milliseconds. */
export function parseDuration(value: string, option: string): number {
  const match = /^(\d+)(ms|s|m|h|d)?$/.exec(value.trim());
  if (!match) throw new UsageError(`${option} must be a duration such as 90s, 5m, 2h, 1d or a number of milliseconds`);
  return Number(match[1]) * UNITS[match[2] ?? "ms"]!;
}

type JobValues = { [K in keyof typeof jobOptions]?: (typeof jobOptions)[K]["type"] extends "boolean" ? boolean : string };

/** The request fields the options name; the server checks them (expression, zone, target, ...). */
function jobFields(values: JobValues): z.input<typeof CronUpdateRequest> {
  const schedules = [values.cron, values.every, values.at].filter((v) => v !== undefined);
  if (schedules.length > 1) throw new UsageError("give one of --cron, --every, --at");
  if ([values.text, values.prompt, values.command].filter((v) => v !== undefined).length > 1) {
    throw new UsageError("give one of --text (a notification), --prompt (an agent turn) or --command (a chat command)");
  }
  if (values.enabled && values.disabled) throw new UsageError("give --enabled or --disabled, not both");
  const schedule =
    values.cron !== undefined
      ? { kind: "cron" as const, expr: values.cron, ...(values.tz ? { tz: values.tz } : {}) }
      : values.every !== undefined
        ? { kind: "every" as const, every_ms: parseDuration(values.every, "--every") }
        : values.at !== undefined
          ? { kind: "at" as const, at: values.at, ...(values.tz ? { tz: values.tz } : {}) }
          : undefined;
  const payload =
    values.text !== undefined
      ? { kind: "notify" as const, text: values.text }
      : values.prompt !== undefined
        ? { kind: "agent_turn" as const, prompt: values.prompt, ...(values.session ? { session: values.session } : {}), deliver: !values["no-deliver"] }
        : values.command !== undefined
          ? { kind: "command" as const, command: values.command, deliver: !values["no-deliver"] }
          : undefined;
  return {
    ...(values.name !== undefined ? { name: values.name } : {}),
    ...(values.target !== undefined ? { target: values.target } : {}),
    ...(schedule ? { schedule } : {}),
    ...(payload ? { payload } : {}),
    ...(values.missed !== undefined ? { missed: values.missed as "skip" | "run_once" } : {}),
    ...(values["max-runs"] !== undefined ? { max_runs: wholeNumber(values["max-runs"], "--max-runs") } : {}),
    ...(values["end-at"] !== undefined ? { end_at: values["end-at"] } : {}),
    ...(values.jitter !== undefined ? { jitter_ms: parseDuration(values.jitter, "--jitter") } : {}),
    ...(values.enabled ? { enabled: true } : values.disabled ? { enabled: false } : {}),
  };
}

/** `nahida cron ...`: the /api/cron routes. */
export async function cronCommand(api: ApiRequest, [sub, ...args]: string[]): Promise<unknown> {
  switch (sub) {
    case "create": {
      const { values } = parseArgs({ args, options: jobOptions });
      const fields = jobFields(values);
      if (!fields.name || !fields.target || !fields.schedule || !fields.payload) {
        throw new UsageError("cron create needs --name, --target, a schedule (--cron, --every or --at) and --text or --prompt");
      }
      return api("POST", "/api/cron", fields as z.input<typeof CronCreateRequest>);
    }
    case "list": {
      const { values } = parseArgs({ args, options: { target: { type: "string" }, enabled: { type: "string" }, limit: { type: "string" } } });
      const query = new URLSearchParams({
        ...(values.target ? { target: values.target } : {}),
        ...(values.enabled ? { enabled: values.enabled } : {}),
        ...(values.limit ? { limit: String(wholeNumber(values.limit, "--limit")) } : {}),
      });
      return api("GET", `/api/cron${query.size ? `?${query}` : ""}`);
    }
    case "get":
      return api("GET", `/api/cron/${idArgument(args, "cron get needs a job id")}`);
    case "update": {
      const id = idArgument(args, "cron update needs a job id");
      const { values } = parseArgs({ args: args.slice(1), options: jobOptions });
      const fields = jobFields(values);
      if (Object.keys(fields).length === 0) throw new UsageError("cron update needs something to change");
      if (fields.payload?.kind === "agent_turn" && (values.session === undefined || !values["no-deliver"])) {
        // A new prompt keeps the job's session and delivery unless they are given again.
        const job = await api<{ payload: { kind: string; session?: string; deliver?: boolean } }>("GET", `/api/cron/${id}`);
        if (job.payload.kind === "agent_turn") {
          fields.payload = {
            ...fields.payload,
            session: values.session ?? job.payload.session ?? "main",
            deliver: values["no-deliver"] ? false : (job.payload.deliver ?? true),
          };
        }
      }
      return api("PATCH", `/api/cron/${id}`, fields);
    }
    case "delete":
      await api("DELETE", `/api/cron/${idArgument(args, "cron delete needs a job id")}`);
      return { deleted: args[0] };
    case "run":
      return api("POST", `/api/cron/${idArgument(args, "cron run needs a job id")}/run`);
    case "runs": {
      const id = idArgument(args, "cron runs needs a job id");
      const { values } = parseArgs({ args: args.slice(1), options: { limit: { type: "string" } } });
      return api("GET", `/api/cron/${id}/runs${values.limit ? `?limit=${wholeNumber(values.limit, "--limit")}` : ""}`);
    }
    default:
      throw new UsageError(`unknown cron command ${JSON.stringify(sub ?? "")}`);
  }
}
