export * from "./env";
