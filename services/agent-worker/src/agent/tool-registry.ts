import { z } from "zod";
import type { ToolContext, ToolDefinition } from "@nahida/plugin-sdk";
import type { ToolSpec } from "./llm.client";

/** A tool result as the model sees it: always JSON, errors included. */
export type ToolOutcome = { ok: true; result: unknown } | { ok: false; error: string };

const MAX_RESULT_CHARS = 16_000;

/**
 * Tools by name. Arguments are parsed and validated here; any problem (unknown tool, bad
 * JSON, schema violation, refusal, a throwing tool) becomes a result the model can read and
 * correct, never an exception out of the agent loop.
 */
export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();
  /** JSON schemas are derived once per registration, not on every model call. */
  private specCache: ToolSpec[] | undefined;

  private readonly aliases = new Map<string, string>();

  register(...tools: ToolDefinition[]): this {
    for (const tool of tools) {
      for (const name of [tool.name, ...(tool.aliases ?? [])]) {
        if (this.tools.has(name) || this.aliases.has(name)) throw new Error(`tool ${name} is registered twice`);
      }
      this.tools.set(tool.name, tool);
      for (const alias of tool.aliases ?? []) this.aliases.set(alias, tool.name);
    }
    this.specCache = undefined;
    return this;
  }

  /** The names of the registered tools (not their aliases). */
  names(): string[] {
    return [...this.tools.keys()];
  }

  /** The tools the model is offered; with `context`, only those this call may use. */
  specs(context?: ToolContext): ToolSpec[] {
    this.specCache ??= [...this.tools.values()].map((tool) => {
      const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.parameters, { io: "input" }) as Record<string, unknown>;
      return { name: tool.name, description: tool.description, parameters };
    });
    if (!context) return this.specCache;
    return this.specCache.filter((spec) => this.refusal(this.tools.get(spec.name)!, context) === null);
  }

  /** Why `context` may not use `tool`; null when it may. */
  private refusal(tool: ToolDefinition, context: ToolContext): string | null {
    if (context.allowedTools && !context.allowedTools.includes(tool.name)) return `${tool.name} is not among the tools this sub-agent was given`;
    if (tool.permitted && !tool.permitted(context)) {
      return context.subagent ? `${tool.name} is not permitted to a sub-agent (no spawning, message or sessions_send)` : `${tool.name} is not permitted here`;
    }
    return null;
  }

  async execute(name: string, rawArguments: string, context: ToolContext): Promise<ToolOutcome> {
    const tool = this.tools.get(name) ?? this.tools.get(this.aliases.get(name) ?? "");
    if (!tool) return { ok: false, error: `unknown tool ${JSON.stringify(name)}; available: ${[...this.tools.keys()].join(", ")}` };
    let json: unknown;
    try {
      json = rawArguments.trim() === "" ? {} : JSON.parse(rawArguments);
    } catch {
      return { ok: false, error: `arguments are not valid JSON: ${rawArguments.slice(0, 200)}` };
    }
    const parsed = tool.parameters.safeParse(json);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "(arguments)"}: ${i.message}`).join("; ");
      return { ok: false, error: `invalid arguments for ${name}: ${issues}` };
    }
    const refused = this.refusal(tool, context);
    if (refused !== null) return { ok: false, error: refused };
    try {
      return { ok: true, result: await tool.execute(parsed.data, context) };
    } catch (error) {
      if (context.signal.aborted) throw error;
      return { ok: false, error: `${name} failed: ${(error as Error).message}` };
    }
  }

  /** The tool message content for an outcome, bounded so one tool cannot flood the context. */
  static render(outcome: ToolOutcome): string {
    const text = JSON.stringify(outcome.ok ? outcome.result ?? null : { error: outcome.error });
    return text.length > MAX_RESULT_CHARS ? `${text.slice(0, MAX_RESULT_CHARS)}… [truncated]` : text;
  }
}
