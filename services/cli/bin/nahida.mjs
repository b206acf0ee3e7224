#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so `npx nahida` works straight from the repository.
import { register } from "tsx/esm/api";

register();
await import("../src/main.ts");
