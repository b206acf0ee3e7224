import { z } from "zod";
import { defineTool } from "@nahida/plugin-sdk";

/** The current time, so the model need not guess it from message envelopes. */
export function currentTimeTool(options: { defaultTimeZone: string; now?: () => Date }) {
  return defineTool({
    name: "current_time",
    description: "Current date and time. Optionally in a given IANA time zone (default: the bot's).",
    parameters: z.object({ timezone: z.string().min(1).max(64).optional().describe("IANA zone such as Europe/Berlin") }),
    async execute({ timezone }) {
      const zone = timezone ?? options.defaultTimeZone;
      const now = (options.now ?? (() => new Date()))();
      let local: string;
      try {
        local = new Intl.DateTimeFormat("sv-SE", { timeZone: zone, dateStyle: "short", timeStyle: "medium" }).format(now);
      } catch {
        throw new Error(`unknown time zone ${JSON.stringify(zone)}`);
      }
      return { utc: now.toISOString(), local, timezone: zone };
    },
  });
}
