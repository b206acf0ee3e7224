import { readFile, stat } from "node:fs/promises";
import { err, type Result } from "@nahida/contracts";
import {
  sendPolicyRefusal,
  withoutChanges,
  type CommandContext,
  type CommandDefinition,
  type EffectRefusal,
  type LedgerReader,
  type PluginManifest,
  type PluginWorkspace,
  type ToolContext,
  type ToolDefinition,
  type ToolOutbox,
} from "@nahida/plugin-sdk";
import { resolveWorkspacePath } from "@nahida/workspace";

/** Whether `address` matches one of the manifest's `permissions.send` patterns. */
export function sendTargetAllowed(patterns: readonly string[], address: string): boolean {
  return patterns.some((p) => p === "*" || p === address || (p.endsWith(":*") && address.startsWith(p.slice(0, -1))));
}

const forbidden = (message: string): Result<never, EffectRefusal> => err({ code: "forbidden", message });

/**
 * A tool's outbox as its plugin's permissions allow. Every chat it addresses beyond the one
 * it was called in (a send, a cron job's target) needs a `permissions.send` pattern and
 * passes the send policy; events into other sessions and sub-agents need `sessions` (and
 * an event passes the send policy for its session); cron jobs need `cron`. A refusal is the
 * call's result, which the model reads.
 */
export function guardOutbox(manifest: PluginManifest, outbox: ToolOutbox, from: { chatAddress: string | null; sessionId: string }, ledger: () => LedgerReader): ToolOutbox {
  const { id, permissions } = manifest;
  const denied = (what: string, permission: string) => forbidden(`plugin ${id} may not ${what}: its plugin.yaml does not grant permissions.${permission}`);
  /** Why the plugin may not address the chat `target` from here; null when it may. */
  const addressRefusal = async (target: string): Promise<string | null> => {
    if (target === from.chatAddress) return null;
    if (!sendTargetAllowed(permissions.send, target)) return `plugin ${id} may not send to ${target}: not in its permissions.send (${permissions.send.join(", ") || "none"})`;
    return sendPolicyRefusal(ledger(), from, target);
  };
  /** Why the plugin may not write the cron job `jobId` (or a new one) with `target`; null when it may. */
  const cronRefusal = async (jobId: string | null, target: string | undefined): Promise<Result<never, EffectRefusal> | null> => {
    if (!permissions.cron) return denied("create, change or delete cron jobs", "cron");
    const job = jobId === null ? null : await ledger().cron.get(jobId);
    if (jobId !== null && !job) return err({ code: "not_found", message: `cron job ${jobId} does not exist` });
    for (const address of [job?.target, target]) {
      const refusal = address === undefined ? null : await addressRefusal(address);
      if (refusal !== null) return forbidden(refusal);
    }
    return null;
  };
  /** Why the plugin may not send an event into `sessionId`; null when it may. */
  const eventRefusal = async (sessionId: string): Promise<Result<never, EffectRefusal> | null> => {
    if (!permissions.sessions) return denied("send into other sessions", "sessions");
    const session = await ledger().sessions.get(sessionId);
    if (!session) return err({ code: "not_found", message: `no session ${sessionId}` });
    const refusal = await sendPolicyRefusal(ledger(), from, session.chatAddress, session.id);
    return refusal === null ? null : forbidden(refusal);
  };
  return {
    send: async (request) => {
      const refusal = await addressRefusal(request.target);
      if (refusal !== null) return forbidden(refusal);
      if (request.recordIn !== undefined && !permissions.sessions) return denied("record into another session", "sessions");
      return outbox.send(request);
    },
    sendEvent: async (event) => (await eventRefusal(event.sessionId)) ?? outbox.sendEvent(event),
    sendEventNow: async (event) => (await eventRefusal(event.sessionId)) ?? outbox.sendEventNow(event),
    createCron: async (request) => (await cronRefusal(null, request.target)) ?? outbox.createCron(request),
    updateCron: async (jobId, request) => (await cronRefusal(jobId, request.target)) ?? outbox.updateCron(jobId, request),
    deleteCron: async (jobId) => (await cronRefusal(jobId, undefined)) ?? outbox.deleteCron(jobId),
    spawnTask: async (spec) =>
      permissions.sessions ? outbox.spawnTask(spec) : err({ reason: "forbidden", message: `plugin ${id} may not start sub-agents: its plugin.yaml does not grant permissions.sessions` }),
    takeResults: (ids) => outbox.takeResults(ids),
    yieldForChildren: () => outbox.yieldForChildren(),
    stopTasks: (ids) => outbox.stopTasks(ids),
    openChildren: () => outbox.openChildren(),
  };
}

/** The tool as the host registers it: its calls (and its `permitted` check) see the plugin's guarded outbox. */
export function guardTool(manifest: PluginManifest, tool: ToolDefinition, ledger: () => LedgerReader): ToolDefinition {
  const guarded = (context: ToolContext): ToolContext => ({ ...context, outbox: guardOutbox(manifest, context.outbox, context, ledger) });
  const { permitted } = tool;
  return {
    ...tool,
    ...(permitted ? { permitted: (context: ToolContext) => permitted(guarded(context)) } : {}),
    execute: (args, context) => tool.execute(args, guarded(context)),
  };
}

/**
 * The command as the host registers it: without `permissions.chat` it cannot change the
 * chat it is used in (its session, modes, `/send` override, sub-agents, a stop), without
 * `permissions.cron` not the chat's cron jobs; a refused change throws, and the chat reads
 * `/<name> failed: <why>`.
 */
export function guardCommand(manifest: PluginManifest, command: CommandDefinition<CommandContext>): CommandDefinition<CommandContext> {
  const { id, permissions } = manifest;
  if (permissions.chat && permissions.cron) return command;
  const refusal = (what: string, kind: "chat" | "cron") => `plugin ${id} may not ${what}: its plugin.yaml does not grant permissions.${kind}`;
  const guard = (context: CommandContext) => withoutChanges(context, refusal, { chat: !permissions.chat, cron: !permissions.cron });
  return { ...command, handler: (invocation) => command.handler({ ...invocation, context: guard(invocation.context) }) };
}

/** The workspace as plugins read it: every path resolved inside it, regular files only, bounded. */
export function pluginWorkspace(workspaceDir: string): PluginWorkspace {
  return {
    resolve: (relativePath) => resolveWorkspacePath(workspaceDir, relativePath),
    async readText(relativePath, maxBytes) {
      const resolved = await resolveWorkspacePath(workspaceDir, relativePath);
      if (!resolved.ok) throw new Error(resolved.error.message);
      const info = await stat(resolved.value);
      if (info.size > maxBytes) throw new Error(`${relativePath} is ${info.size} bytes; the limit is ${maxBytes}`);
      return readFile(resolved.value, "utf8");
    },
  };
}
