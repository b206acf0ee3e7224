// The bare send route in a process of its own, so that it gets a core as the gateway does
// instead of sharing the bench's event loop with the load generator. Prints "ready <address>".
import { startBareSendServer } from "./bare-send.server";

const server = await startBareSendServer({
  databaseUrl: process.env.DATABASE_URL!,
  redisUrl: process.env.REDIS_URL!,
  prefix: process.env.NAHIDA_QUEUE_PREFIX!,
});
process.stdout.write(`ready ${server.address}\n`);
process.on("SIGTERM", () => void server.close().then(() => process.exit(0)));
