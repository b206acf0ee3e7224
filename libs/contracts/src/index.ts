export * from "./result";
export * from "./chat-address";
export * from "./messages";
export * from "./job-catalog";
export * from "./errors";
export * from "./lanes";
export * from "./api";
export * from "./history-view";
