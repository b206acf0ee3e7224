// One role of the minimal bot (./minimal-bot.ts) in a process of its own, as Nahida's services
// run in bench:processes. MINIMAL_ROLE picks it; prints "minimal bot ready" once it takes traffic.
import { startMinimalBot, type MinimalRole } from "./minimal-bot";

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const role = env("MINIMAL_ROLE") as MinimalRole;
const bot = await startMinimalBot(role, {
  databaseUrl: env("DATABASE_URL"),
  redisUrl: env("REDIS_URL"),
  prefix: env("NAHIDA_QUEUE_PREFIX"),
  ...(role === "webhook" ? { webhook: { port: Number(env("TELEGRAM_WEBHOOK_PORT")), secret: env("TELEGRAM_WEBHOOK_SECRET") } } : {}),
  ...(role === "worker" ? { openai: { baseURL: env("OPENAI_BASE_URL"), apiKey: env("OPENAI_API_KEY"), model: env("OPENAI_MODEL") } } : {}),
  ...(role === "sender" ? { telegram: { apiRoot: env("TELEGRAM_API_ROOT"), token: env("TELEGRAM_BOT_TOKEN") } } : {}),
});
process.stdout.write(`minimal bot ready (${role})\n`);
process.on("SIGTERM", () => void bot.close().then(() => process.exit(0)));
