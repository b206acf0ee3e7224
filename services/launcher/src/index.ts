export * from "./channel-ingress";
export * from "./channel-instances.env";
export * from "./launcher.env";
export * from "./nahida";
export * from "./preflight";
export * from "./tracing.env";
