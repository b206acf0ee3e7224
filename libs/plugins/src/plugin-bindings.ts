import type { LedgerReader, PluginLogger } from "@nahida/plugin-sdk";

/** What the running host hands the plugins once its services exist. */
export interface PluginBindings {
  readonly ledger: LedgerReader;
  logger(plugin: string): PluginLogger;
  toolNames(): string[];
  bind(services: { ledger: LedgerReader; logger: (plugin: string) => PluginLogger }): void;
}

/**
 * The methods of each ledger part a plugin may call: exactly `LedgerReader`'s, so that the
 * repositories behind it (which also write) are never reachable through `api.ledger`.
 */
const LEDGER_METHODS = {
  sessions: ["get", "getChat", "canSee", "overview"],
  turns: ["page"],
  events: ["state"],
  runs: ["recentRuns"],
  policies: ["sendPolicy"],
  cron: ["get", "list"],
  tasks: ["getMany", "listByParent"],
  compactions: ["forHistory"],
} as const satisfies { [P in keyof LedgerReader]: readonly (keyof LedgerReader[P])[] };

/**
 * What plugins get from the running host, bound when the services start: registration
 * happens before there is a database, so the ledger and the logger are looked up on use.
 */
export class LoadedPluginBindings implements PluginBindings {
  private bound: { ledger: LedgerReader; logger: (plugin: string) => PluginLogger } | null = null;
  /** Set once every plugin registered. */
  names: () => string[] = () => [];

  /** Plain objects of the allowed methods, each calling the bound repository when used. */
  readonly ledger: LedgerReader = Object.fromEntries(
    Object.entries(LEDGER_METHODS).map(([part, methods]) => [
      part,
      Object.fromEntries(
        methods.map((method) => [
          method,
          (...args: unknown[]) => {
            if (!this.bound) throw new Error("the ledger is available once the services started: use it in a tool or command, not in register");
            const owner = this.bound.ledger[part as keyof LedgerReader] as unknown as Record<string, (...a: unknown[]) => unknown>;
            return owner[method]!.apply(owner, args);
          },
        ]),
      ),
    ]),
  ) as unknown as LedgerReader;

  logger(plugin: string): PluginLogger {
    const line = (level: keyof PluginLogger) => (fields: Record<string, unknown>, message: string) => this.bound?.logger(plugin)[level](fields, message);
    return { debug: line("debug"), info: line("info"), warn: line("warn"), error: line("error") };
  }

  toolNames(): string[] {
    return this.names();
  }

  bind(services: { ledger: LedgerReader; logger: (plugin: string) => PluginLogger }): void {
    this.bound = services;
  }
}
