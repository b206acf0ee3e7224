export * from "./error-handler.plugin";
export * from "./readiness";
