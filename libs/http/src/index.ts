export * from "./error-handler.plugin";
