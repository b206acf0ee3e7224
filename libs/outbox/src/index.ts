export * from "./outbox";
export * from "./session-events";
