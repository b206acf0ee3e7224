export * from "./lane.store";
export * from "./lane-runtime";
