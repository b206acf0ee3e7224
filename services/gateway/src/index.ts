export * from "./app";
export * from "./gateway.service";
export * from "./gateway.env";
