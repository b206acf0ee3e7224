import { InboundMessageRepository } from "@nahida/db";
import { TypedQueue, createRedis } from "@nahida/queue";
import { TEST_REDIS_URL, clearQueuePrefix, createTestDatabase, testQueuePrefix, type TestDatabase } from "../../../test/support/infra";
import { createIntake, type Intake } from "./intake";

/** A real intake on a fresh database and queue prefix, for tests. */
export interface IntakeHarness {
  t: TestDatabase;
  queue: TypedQueue<"inbound">;
  inbound: InboundMessageRepository;
  intake: Intake;
  close(): Promise<void>;
}

export async function startIntakeHarness(label: string): Promise<IntakeHarness> {
  const t = await createTestDatabase(label);
  const redis = createRedis({ url: TEST_REDIS_URL });
  const prefix = testQueuePrefix(label);
  const queue = new TypedQueue("inbound", { connection: redis, prefix });
  const inbound = new InboundMessageRepository(t.db.prisma);
  return {
    t,
    queue,
    inbound,
    intake: createIntake({ inbound, queue }),
    async close() {
      await queue.close();
      redis.disconnect();
      await clearQueuePrefix(TEST_REDIS_URL, prefix);
      await t.drop();
    },
  };
}
