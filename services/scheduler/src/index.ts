export * from "./scheduler.service";
export * from "./scheduler.env";
export * from "./janitor";
export { cronDeliveryKey, isolatedLaneKey, namedLaneKey, writeCronEffect, type WrittenEffect } from "./cron-effects";
