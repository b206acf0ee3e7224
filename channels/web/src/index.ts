export * from "./web.channel";
export * from "./web.env";
export * from "./web.sender";
export * from "./web-chat.normalizer";
export * from "./web-chat.protocol";
export * from "./web-chat.client-frame";
export * from "./web-visitor";
