export * from "./inbound-message.repository";
export * from "./session.repository";
export * from "./turn.repository";
export * from "./delivery.repository";
export * from "./api-token.repository";
export * from "./repositories";
export * from "./cron.repository";
export * from "./session-event.repository";
