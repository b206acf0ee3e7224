export * from "./channel-module";
export * from "./channel-sender";
