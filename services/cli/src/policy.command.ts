import { readFile } from "node:fs/promises";
import type { SendPolicy } from "@nahida/contracts";
import type { ApiRequest } from "./api.client";
import { UsageError } from "./usage-error";

export const POLICY_USAGE = `  policy get                      the send policy document (JSON, ready for policy set)
  policy set <file.json>          replace the send policy with the document in the file (admin)`;

/** `nahida policy ...`: the /api/policy/send routes; the document is JSON both ways. */
export async function policyCommand(api: ApiRequest, [sub, ...args]: string[]): Promise<unknown> {
  switch (sub) {
    case "get":
      return api<SendPolicy>("GET", "/api/policy/send");
    case "set": {
      const file = args[0];
      if (!file) throw new UsageError("policy set needs a JSON file");
      let document: unknown;
      try {
        document = JSON.parse(await readFile(file, "utf8"));
      } catch (error) {
        throw new UsageError(`policy set: cannot read ${file} as JSON: ${(error as Error).message}`);
      }
      // The server validates the rules and names the bad one.
      return api<SendPolicy>("PUT", "/api/policy/send", document);
    }
    default:
      throw new UsageError(`unknown policy command ${JSON.stringify(sub ?? "")}`);
  }
}
