export * from "./error-handler.plugin";
export * from "./readiness";
export * from "./metrics.route";
