import { parseCommand, type OutboundMessage } from "@nahida/contracts";
import type { CommandDefinition } from "@nahida/plugin-sdk";

export { parseCommand };

export type CommandOutcome =
  | { kind: "handled"; reply: Partial<OutboundMessage> | null }
  | { kind: "not_a_command" }
  | { kind: "failed"; reply: Partial<OutboundMessage>; error: string };

/**
 * Matches commands before the agent. A hit never reaches the LLM; a miss (unknown
 * command) is left to the agent. Each handler runs under the router's timeout.
 */
export class CommandRouter<C> {
  private readonly commands = new Map<string, CommandDefinition<C>>();

  constructor(private readonly options: { timeoutMs: number; prefix?: string }) {}

  register(...commands: CommandDefinition<C>[]): this {
    for (const command of commands) {
      if (this.commands.has(command.name)) throw new Error(`command /${command.name} is registered twice`);
      this.commands.set(command.name, command);
    }
    return this;
  }

  list(): CommandDefinition<C>[] {
    return [...this.commands.values()];
  }

  get prefix(): string {
    return this.options.prefix ?? "/";
  }

  match(text: string, parsed?: { name: string; args: string }): { command: CommandDefinition<C>; args: string } | null {
    const call = parsed ?? parseCommand(text.trim(), this.prefix);
    if (!call) return null;
    const command = this.commands.get(call.name);
    return command ? { command, args: call.args } : null;
  }

  async run(
    text: string,
    context: C,
    parentSignal: AbortSignal,
    parsed?: { name: string; args: string },
  ): Promise<CommandOutcome> {
    const hit = this.match(text, parsed);
    if (!hit) return { kind: "not_a_command" };
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    const signal = AbortSignal.any([parentSignal, timeout]);
    let timer: NodeJS.Timeout | undefined;
    try {
      const result = await Promise.race([
        Promise.resolve(hit.command.handler({ name: hit.command.name, args: hit.args, context, signal })),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`timed out after ${this.options.timeoutMs} ms`)), this.options.timeoutMs);
        }),
      ]);
      if (result === undefined || result === null) return { kind: "handled", reply: null };
      return { kind: "handled", reply: typeof result === "string" ? { text: result } : result };
    } catch (error) {
      const message = (error as Error).message;
      return { kind: "failed", reply: { text: `/${hit.command.name} failed: ${message}` }, error: message };
    } finally {
      clearTimeout(timer);
    }
  }
}
