export * from "./markdown-tree";
export * from "./markdown.parser";
export * from "./plain-text.renderer";
export * from "./text-layout";
export * from "./code-fence";
export * from "./chunk-text";
