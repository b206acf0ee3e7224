import { timingSafeEqual } from "node:crypto";
import Fastify from "fastify";
import { Api } from "grammy";
import { Queue, Worker } from "bullmq";
import OpenAI from "openai";
import pg from "pg";
import { createRedis } from "@nahida/queue";

/**
 * The minimal bot bench:processes measures Nahida against (issue 26): the irreducible work of
 * answering a Telegram message through a queue, hand-written with the same libraries, and none
 * of Nahida's guarantees (no lanes or per-chat order, no leases, no retries of a run, no
 * dedupe, no send fencing, no tracing, no logs):
 * - webhook: the secret check, one INSERT, one queue add;
 * - worker: one read of the message and its chat's last turns, the LLM call, the two turns and
 *   a delivery row in one statement, one queue add;
 * - sender: one read, `sendMessage`, one UPDATE.
 * Its tables live in a schema of their own; statements are named (prepared once per
 * connection), as Nahida's hot ones are.
 */
export const MINIMAL_SCHEMA = "minimal";
export const MINIMAL_QUEUES = { inbound: "mb-inbound", outbound: "mb-outbound" } as const;
const INBOUND = MINIMAL_QUEUES.inbound;
const OUTBOUND = MINIMAL_QUEUES.outbound;
/** Nahida's defaults: AGENT_CONCURRENCY, DELIVERY_CONCURRENCY, AGENT_HISTORY_TURNS, DATABASE_POOL_SIZE. */
const CONCURRENCY = 16;
const HISTORY_TURNS = 100;
const POOL_SIZE = 10;

export type MinimalRole = "webhook" | "worker" | "sender";

export interface MinimalBotOptions {
  databaseUrl: string;
  redisUrl: string;
  prefix: string;
  webhook?: { port: number; secret: string };
  openai?: { baseURL: string; apiKey: string; model: string };
  telegram?: { apiRoot: string; token: string };
}

export async function createMinimalSchema(pool: pg.Pool): Promise<void> {
  await pool.query(`
    CREATE SCHEMA IF NOT EXISTS ${MINIMAL_SCHEMA};
    CREATE TABLE IF NOT EXISTS ${MINIMAL_SCHEMA}.messages (
      update_id bigint PRIMARY KEY, chat_id bigint NOT NULL, text text NOT NULL, received_at timestamptz NOT NULL DEFAULT now());
    CREATE TABLE IF NOT EXISTS ${MINIMAL_SCHEMA}.turns (
      id bigserial PRIMARY KEY, chat_id bigint NOT NULL, role text NOT NULL, content text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
    CREATE INDEX IF NOT EXISTS turns_chat ON ${MINIMAL_SCHEMA}.turns (chat_id, id);
    CREATE TABLE IF NOT EXISTS ${MINIMAL_SCHEMA}.deliveries (
      id bigserial PRIMARY KEY, chat_id bigint NOT NULL, text text NOT NULL, status text NOT NULL DEFAULT 'queued',
      platform_message_id bigint, sent_at timestamptz);`);
}

/** Starts one role; resolves once it takes traffic. */
export async function startMinimalBot(role: MinimalRole, o: MinimalBotOptions): Promise<{ address?: string; close(): Promise<void> }> {
  const pool = new pg.Pool({ connectionString: o.databaseUrl, max: POOL_SIZE });
  const redis = createRedis({ url: o.redisUrl });
  const closers: (() => Promise<unknown>)[] = [() => pool.end(), async () => redis.disconnect()];
  const close = async () => {
    for (const fn of closers.reverse()) await fn();
  };
  const jobOptions = { removeOnComplete: true, removeOnFail: true };

  if (role === "webhook") {
    const { port, secret } = o.webhook!;
    const expected = Buffer.from(secret);
    const queue = new Queue(INBOUND, { connection: redis, prefix: o.prefix });
    closers.push(() => queue.close());
    const app = Fastify({ logger: false });
    app.post("/telegram/webhook", async (request, reply) => {
      const given = Buffer.from(String(request.headers["x-telegram-bot-api-secret-token"] ?? ""));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return reply.status(401).send();
      const update = request.body as { update_id: number; message?: { chat: { id: number }; text?: string } };
      if (!update.message?.text) return reply.status(200).send();
      await pool.query({
        name: "mb-store",
        text: `INSERT INTO ${MINIMAL_SCHEMA}.messages (update_id, chat_id, text) VALUES ($1, $2, $3)`,
        values: [update.update_id, update.message.chat.id, update.message.text],
      });
      await queue.add("message", { updateId: update.update_id }, jobOptions);
      return reply.status(200).send();
    });
    closers.push(() => app.close());
    const address = await app.listen({ host: "127.0.0.1", port });
    return { address, close };
  }

  if (role === "worker") {
    const llm = o.openai!;
    const client = new OpenAI({ baseURL: llm.baseURL, apiKey: llm.apiKey });
    const queue = new Queue(OUTBOUND, { connection: redis, prefix: o.prefix });
    closers.push(() => queue.close());
    const worker = new Worker<{ updateId: number }>(
      INBOUND,
      async (job) => {
        const { rows } = await pool.query<{ chat_id: string; text: string; history: { role: "user" | "assistant"; content: string }[] }>({
          name: "mb-read",
          text: `SELECT m.chat_id::text, m.text,
                        coalesce((SELECT json_agg(json_build_object('role', t.role, 'content', t.content) ORDER BY t.id)
                                    FROM (SELECT id, role, content FROM ${MINIMAL_SCHEMA}.turns WHERE chat_id = m.chat_id ORDER BY id DESC LIMIT ${HISTORY_TURNS}) t), '[]') AS history
                   FROM ${MINIMAL_SCHEMA}.messages m WHERE m.update_id = $1`,
          values: [job.data.updateId],
        });
        const message = rows[0]!;
        const completion = await client.chat.completions.create({
          model: llm.model,
          messages: [{ role: "system", content: "You are a helpful bot." }, ...message.history, { role: "user", content: message.text }],
        });
        const answer = completion.choices[0]?.message.content ?? "";
        const stored = await pool.query<{ id: string }>({
          name: "mb-answer",
          text: `WITH turns AS (INSERT INTO ${MINIMAL_SCHEMA}.turns (chat_id, role, content) VALUES ($1, 'user', $2), ($1, 'assistant', $3))
                 INSERT INTO ${MINIMAL_SCHEMA}.deliveries (chat_id, text) VALUES ($1, $3) RETURNING id::text`,
          values: [message.chat_id, message.text, answer],
        });
        await queue.add("send", { deliveryId: stored.rows[0]!.id }, jobOptions);
      },
      { connection: createRedis({ url: o.redisUrl, blocking: true }), prefix: o.prefix, concurrency: CONCURRENCY },
    );
    closers.push(() => worker.close());
    await worker.waitUntilReady();
    return { close };
  }

  const telegram = o.telegram!;
  const api = new Api(telegram.token, { apiRoot: telegram.apiRoot });
  const worker = new Worker<{ deliveryId: string }>(
    OUTBOUND,
    async (job) => {
      const { rows } = await pool.query<{ chat_id: string; text: string }>({
        name: "mb-delivery",
        text: `SELECT chat_id::text, text FROM ${MINIMAL_SCHEMA}.deliveries WHERE id = $1`,
        values: [job.data.deliveryId],
      });
      const sent = await api.sendMessage(rows[0]!.chat_id, rows[0]!.text);
      await pool.query({
        name: "mb-sent",
        text: `UPDATE ${MINIMAL_SCHEMA}.deliveries SET status = 'sent', platform_message_id = $2, sent_at = now() WHERE id = $1`,
        values: [job.data.deliveryId, sent.message_id],
      });
    },
    { connection: createRedis({ url: o.redisUrl, blocking: true }), prefix: o.prefix, concurrency: CONCURRENCY },
  );
  closers.push(() => worker.close());
  await worker.waitUntilReady();
  return { close };
}
