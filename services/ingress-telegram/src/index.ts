export * from "./telegram-ingress.env";
export * from "./telegram-ingress.service";
export * from "./telegram.normalizer";
