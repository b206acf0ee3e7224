export * from "./channel-sender";
