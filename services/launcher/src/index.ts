export * from "./launcher.env";
export * from "./nahida";
export * from "./preflight";
