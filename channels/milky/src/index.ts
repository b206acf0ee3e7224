export * from "./milky-api.client";
export * from "./milky-text";
export * from "./milky.normalizer";
export * from "./milky.sender";
