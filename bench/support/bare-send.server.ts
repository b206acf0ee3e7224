import { randomUUID } from "node:crypto";
import Fastify from "fastify";
import { Queue } from "bullmq";
import pg from "pg";
import { jobCatalog } from "@nahida/contracts";
import { createRedis } from "@nahida/queue";

export interface BareSendServerOptions {
  databaseUrl: string;
  redisUrl: string;
  prefix: string;
  /** 0 picks a free port. */
  port?: number;
}

export interface BareSendServer {
  /** http://127.0.0.1:port */
  address: string;
  close(): Promise<void>;
}

const SEND = jobCatalog.outbound["delivery.send"];

/**
 * The floor under `POST /api/send`: a bare Fastify route doing the same durable work, one
 * INSERT into deliveries and one add of the `outbound/delivery.send` job named by the row
 * (so the delivery processes send these too, as they send the gateway's), and nothing else:
 * no auth, no rate limit, no schema, no Prisma, no transaction.
 */
export async function startBareSendServer(options: BareSendServerOptions): Promise<BareSendServer> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 10, options: "-c TimeZone=UTC" });
  const redis = createRedis({ url: options.redisUrl });
  const queue = new Queue("outbound", { connection: redis, prefix: options.prefix });
  const app = Fastify({ logger: false });
  app.post("/send", async (request, reply) => {
    const body = request.body as { target: string; text: string };
    const id = randomUUID();
    const message = { text: body.text, attachments: [], extra: {} };
    const { rows } = await pool.query<{ id: string; status: string }>(
      `INSERT INTO deliveries (id, target, message, source, expires_at)
       VALUES ($1::uuid, $2, $3::jsonb, 'api', now() + interval '1 hour') RETURNING id::text, status`,
      [id, body.target, JSON.stringify(message)],
    );
    await queue.add("delivery.send", { deliveryId: id }, {
      jobId: id,
      attempts: SEND.attempts,
      backoff: { type: "exponential", delay: SEND.backoffMs },
      removeOnComplete: { age: SEND.keepCompletedSeconds, count: SEND.keepCompletedCount },
      removeOnFail: { age: SEND.keepFailedSeconds },
    });
    return reply.status(202).send({ delivery_id: rows[0]!.id, status: rows[0]!.status });
  });
  const address = await app.listen({ host: "127.0.0.1", port: options.port ?? 0 });
  return {
    address,
    async close() {
      await app.close();
      await queue.close();
      redis.disconnect();
      await pool.end();
    },
  };
}
