export * from "./task-ledger";
export * from "./local-executor";
