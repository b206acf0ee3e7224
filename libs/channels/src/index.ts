export * from "./channel-module";
export * from "./channel-sender";
export * from "./webhook-listeners";
