export * from "./workspace-path";
