export * from "./agent-worker.env";
export * from "./agent-worker.service";
export * from "./agent/llm.client";
