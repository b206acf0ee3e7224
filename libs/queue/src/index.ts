export * from "./redis";
export * from "./typed-queue";
