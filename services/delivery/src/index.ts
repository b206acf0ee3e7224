export * from "./channel-sender";
export * from "./delivery.service";
export * from "./telegram/telegram.sender";
