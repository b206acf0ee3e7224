export * from "./database";
export * from "./ids";
export * from "./statements";
export * from "./lane-append";
export * from "./database-url";
export * from "./migrations/migration-runner";
export { Prisma } from "./generated/prisma/client";
export type * from "./generated/prisma/client";
export * from "./repositories";
