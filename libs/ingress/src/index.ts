export * from "./intake";
