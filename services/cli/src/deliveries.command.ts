import { parseArgs } from "node:util";
import type { ApiRequest } from "./api.client";
import { UsageError } from "./usage-error";
import { idArgument, wholeNumber } from "./cli-args";

export const DELIVERIES_USAGE = `  deliveries list [--status queued|sending|sent|failed|expired] [--target ADDRESS] [--source SOURCE]
                  [--since ISO] [--until ISO] [--limit N] [--offset N]
                                  deliveries, newest first
  deliveries get <id>             show a delivery's status
  deliveries retry <id>           send a failed or expired delivery once more (parts already sent are not repeated)`;

/** `nahida deliveries ...`: the /api/deliveries routes. */
export async function deliveriesCommand(api: ApiRequest, [sub, ...args]: string[]): Promise<unknown> {
  switch (sub) {
    case "list": {
      const { values } = parseArgs({
        args,
        options: {
          status: { type: "string" },
          target: { type: "string" },
          source: { type: "string" },
          since: { type: "string" },
          until: { type: "string" },
          limit: { type: "string" },
          offset: { type: "string" },
        },
      });
      // The server checks the values (a status it does not know, a malformed instant).
      const query = new URLSearchParams({
        ...(values.status ? { status: values.status } : {}),
        ...(values.target ? { target: values.target } : {}),
        ...(values.source ? { source: values.source } : {}),
        ...(values.since ? { since: values.since } : {}),
        ...(values.until ? { until: values.until } : {}),
        ...(values.limit ? { limit: String(wholeNumber(values.limit, "--limit")) } : {}),
        ...(values.offset ? { offset: String(wholeNumber(values.offset, "--offset")) } : {}),
      });
      return api("GET", `/api/deliveries${query.size ? `?${query}` : ""}`);
    }
    case "get":
      return api("GET", `/api/deliveries/${idArgument(args, "deliveries get needs a delivery id")}`);
    case "retry":
      return api("POST", `/api/deliveries/${idArgument(args, "deliveries retry needs a delivery id")}/retry`);
    default:
      throw new UsageError(`unknown deliveries command ${JSON.stringify(sub ?? "")}`);
  }
}
