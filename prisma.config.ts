import { defineConfig } from "prisma/config";

// Read only by the Prisma CLI (generate; migrate deploy where its engine is available).
// The services never read this file: they run `libs/db` migrations themselves.
export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  datasource: { url: process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/nahida" },
});
