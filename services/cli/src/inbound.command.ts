import { parseArgs } from "node:util";
import type { QuarantineList } from "@nahida/contracts";
import type { ApiRequest } from "./api.client";
import { wholeNumber } from "./cli-args";
import { UsageError } from "./usage-error";

export const INBOUND_USAGE = `  inbound quarantine [--channel NAME] [--limit N] [--offset N] [--json]
                                  events acknowledged but not storable as messages, newest first`;

function quarantineText(list: QuarantineList): string {
  if (list.events.length === 0) return `no quarantined events (${list.total} in all)`;
  const lines = list.events.map((e) => `${e.received_at}  ${e.channel} (account ${e.account_id})  ${e.id}\n  reason: ${e.reason}\n  event:  ${e.raw.length > 300 ? `${e.raw.slice(0, 300)}…` : e.raw}`);
  return `${lines.join("\n")}\n${list.offset + 1}-${list.offset + list.events.length} of ${list.total} events`;
}

/** `nahida inbound ...`: the /api/inbound routes. */
export async function inboundCommand(api: ApiRequest, [sub, ...args]: string[]): Promise<unknown> {
  if (sub !== "quarantine") throw new UsageError(sub ? `unknown inbound command ${JSON.stringify(sub)}` : "inbound needs a command: quarantine");
  const { values } = parseArgs({ args, options: { channel: { type: "string" }, limit: { type: "string" }, offset: { type: "string" }, json: { type: "boolean" } } });
  const query = new URLSearchParams({
    ...(values.channel ? { channel: values.channel } : {}),
    ...(values.limit ? { limit: String(wholeNumber(values.limit, "--limit")) } : {}),
    ...(values.offset ? { offset: String(wholeNumber(values.offset, "--offset")) } : {}),
  });
  const list = await api<QuarantineList>("GET", `/api/inbound/quarantine${query.size ? `?${query}` : ""}`);
  return values.json ? list : quarantineText(list);
}
