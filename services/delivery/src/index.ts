export * from "./delivery.service";
