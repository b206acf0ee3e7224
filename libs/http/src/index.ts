export * from "./error-handler.plugin";
export * from "./readiness";
export * from "./metrics.route";
export * from "./json-body.plugin";
export * from "./server-options";
export * from "./cookies";
export * from "./browser-bundle";
export * from "./page-security";
