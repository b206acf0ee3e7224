export * from "./plugin-loader";
export * from "./loaded-plugins";
export { readManifest } from "./plugin-manifest.reader";
