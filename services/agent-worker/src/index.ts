export * from "./agent-worker.env";
export * from "./agent-worker.service";
export * from "./agent/llm.client";
export { defineTool, type ToolContext, type ToolDefinition, type ToolOutbox } from "./agent/tool-registry";
