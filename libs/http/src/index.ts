export * from "./error-handler.plugin";
export * from "./readiness";
export * from "./metrics.route";
export * from "./json-body.plugin";
export * from "./server-options";
