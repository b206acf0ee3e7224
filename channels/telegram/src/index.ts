export * from "./telegram.channel";
export * from "./telegram.env";
export * from "./telegram-ingress.service";
export * from "./telegram.normalizer";
export * from "./telegram.sender";
