import { extname } from "node:path";
import { parseArgs } from "node:util";
import type { z } from "zod";
import { DeliveryStatus, type AttachmentType, type DeliveryView, type SendRequest, type SendResponse } from "@nahida/contracts";
import { ApiError, createApiClient, type ApiRequest } from "./api.client";
import { CRON_USAGE, cronCommand } from "./cron.command";
import { DELIVERIES_USAGE, deliveriesCommand } from "./deliveries.command";
import { POLICY_USAGE, policyCommand } from "./policy.command";
import { SESSIONS_USAGE, sessionsCommand } from "./sessions.command";
import { TASKS_USAGE, tasksCommand } from "./tasks.command";
import { INBOUND_USAGE, inboundCommand } from "./inbound.command";
import { PLUGINS_USAGE, pluginsCommand } from "./plugins.command";
import { UsageError } from "./usage-error";

const USAGE = `Usage: nahida <command> [options]

  send --target <channel:type:id[:thread]> [--reply-to ID] [--attach PATH]... [--session ID]
       [--idempotency-key KEY] [--wait] <text>
                                  queue a message; --attach paths are inside the server's workspace
${DELIVERIES_USAGE}
${SESSIONS_USAGE}
${TASKS_USAGE}
${INBOUND_USAGE}
${PLUGINS_USAGE}
${POLICY_USAGE}
  tokens create --name NAME --scopes send,read,cron,admin
                                  create an API token (the secret is printed once)
  tokens list                     list tokens
  tokens revoke <id>              revoke a token
${CRON_USAGE}

Environment: NAHIDA_API_URL (default http://127.0.0.1:8080), NAHIDA_API_TOKEN.
Exit status: 0 ok, 1 the API refused or failed, 2 bad usage.`;

const PHOTO = new Set([".png", ".jpg", ".jpeg", ".gif", ".webp"]);
const AUDIO = new Set([".mp3", ".ogg", ".oga", ".m4a", ".flac", ".wav"]);
const VIDEO = new Set([".mp4", ".mov", ".webm", ".mkv"]);

/** Attachment type from the file extension; anything unknown goes as a document. */
export function attachmentType(path: string): AttachmentType {
  const ext = extname(path).toLowerCase();
  if (PHOTO.has(ext)) return "photo";
  if (AUDIO.has(ext)) return "audio";
  if (VIDEO.has(ext)) return "video";
  return "document";
}

function print(value: unknown): void {
  process.stdout.write(`${typeof value === "string" ? value : JSON.stringify(value, null, 2)}\n`);
}

async function send(api: ApiRequest, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      target: { type: "string" },
      "reply-to": { type: "string" },
      attach: { type: "string", multiple: true },
      session: { type: "string" },
      "idempotency-key": { type: "string" },
      wait: { type: "boolean" },
    },
  });
  if (!values.target) throw new UsageError("send needs --target");
  const text = positionals.join(" ");
  const body: z.input<typeof SendRequest> = {
    target: values.target,
    text,
    ...(values["reply-to"] ? { reply_to: values["reply-to"] } : {}),
    ...(values.attach?.length ? { attachments: values.attach.map((path) => ({ type: attachmentType(path), path })) } : {}),
    ...(values.session ? { session_id: values.session } : {}),
  };
  const headers: Record<string, string> = values["idempotency-key"] ? { "idempotency-key": values["idempotency-key"] } : {};
  const queued = await api<z.infer<typeof SendResponse>>("POST", "/api/send", body, headers);
  if (!values.wait) return print(queued);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const delivery = await api<DeliveryView>("GET", `/api/deliveries/${queued.delivery_id}`);
    const pending: DeliveryStatus[] = [DeliveryStatus.enum.queued, DeliveryStatus.enum.sending];
    if (!pending.includes(delivery.status) || Date.now() > deadline) {
      print(delivery);
      if (delivery.status !== "sent") process.exitCode = 1;
      return;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function tokens(api: ApiRequest, [sub, ...args]: string[]): Promise<void> {
  switch (sub) {
    case "create": {
      const { values } = parseArgs({ args, options: { name: { type: "string" }, scopes: { type: "string" } } });
      if (!values.name || !values.scopes) throw new UsageError("tokens create needs --name and --scopes");
      return print(await api("POST", "/api/tokens", { name: values.name, scopes: values.scopes.split(",").map((s) => s.trim()) }));
    }
    case "list":
      return print(await api("GET", "/api/tokens"));
    case "revoke":
      if (!args[0]) throw new UsageError("tokens revoke needs a token id");
      return print(await api("DELETE", `/api/tokens/${encodeURIComponent(args[0])}`));
    default:
      throw new UsageError(`unknown tokens command ${JSON.stringify(sub ?? "")}`);
  }
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (!command || command === "--help" || command === "-h" || command === "help") return print(USAGE);
  const api = createApiClient({
    baseUrl: process.env.NAHIDA_API_URL || "http://127.0.0.1:8080",
    ...(process.env.NAHIDA_API_TOKEN ? { token: process.env.NAHIDA_API_TOKEN } : {}),
  });
  switch (command) {
    case "send":
      return send(api, rest);
    case "deliveries":
      return print(await deliveriesCommand(api, rest));
    case "tokens":
      return tokens(api, rest);
    case "cron":
      return print(await cronCommand(api, rest));
    case "sessions": {
      const result = await sessionsCommand(api, rest);
      print(result.output);
      process.exitCode = result.exitCode;
      return;
    }
    case "policy":
      return print(await policyCommand(api, rest));
    case "tasks":
      return print(await tasksCommand(api, rest));
    case "inbound":
      return print(await inboundCommand(api, rest));
    case "plugins":
      return print(await pluginsCommand(api, rest));
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof ApiError) {
    process.stderr.write(`nahida: ${error.status ? `${error.status} ` : ""}${error.code}: ${error.message}\n`);
    process.exitCode = 1;
  } else if (error instanceof UsageError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
    process.stderr.write(`nahida: ${(error as Error).message}\n\n${USAGE}\n`);
    process.exitCode = 2;
  } else {
    throw error;
  }
}
