export * from "./redis";
export * from "./typed-queue";
export * from "./periodic";
export * from "./redis-leadership";
export * from "./leader-loop";
