export * from "./plugin-loader";
export * from "./loaded-plugins";
export { hostAllowed, guardedFetch } from "./plugin-fetch";
export { sendTargetAllowed } from "./plugin-guards";
export { locatePlugin, readManifest } from "./plugin-manifest.reader";
