export * from "./schedule";
export * from "./plan-fire";
export * from "./cron-jobs";
export * from "./stored-job";
