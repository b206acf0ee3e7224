import { InboundMessageRepository, InboundQuarantineRepository } from "@nahida/db";
import { createTestDatabase, type TestDatabase } from "../../../test/support/infra";
import { createIntake, type Intake } from "./intake";

/** A real intake on a fresh database, recording the lanes it wakes and interrupts, for tests. */
export interface IntakeHarness {
  t: TestDatabase;
  inbound: InboundMessageRepository;
  intake: Intake;
  /** Lane keys woken, in order. */
  wakes: string[];
  /** Lane keys interrupted (a `/stop`), in order. */
  interrupts: string[];
  /** Lane runs superseded by a newer message (`interrupt` mode): `<seq> <lane key>`, in order. */
  supersedes: string[];
  /** Lane items of kind `inbound` that refer to the message. */
  laneItemsOf(inboundMessageId: string): Promise<{ lane_key: string; seq: string }[]>;
  close(): Promise<void>;
}

export async function startIntakeHarness(label: string): Promise<IntakeHarness> {
  const t = await createTestDatabase(label);
  const inbound = new InboundMessageRepository(t.db);
  const wakes: string[] = [];
  const interrupts: string[] = [];
  const supersedes: string[] = [];
  return {
    t,
    inbound,
    wakes,
    interrupts,
    supersedes,
    intake: createIntake({
      inbound,
      quarantine: new InboundQuarantineRepository(t.db.prisma),
      wake: async (laneKey) => void wakes.push(laneKey),
      interrupt: async (laneKey) => void interrupts.push(laneKey),
      supersede: async (laneKey, seq) => void supersedes.push(`${seq} ${laneKey}`),
    }),
    async laneItemsOf(inboundMessageId) {
      const rows = await t.db.pool.query<{ lane_key: string; seq: string }>(
        "SELECT lane_key, seq::text AS seq FROM lane_items WHERE kind = 'inbound' AND ref_id = $1 ORDER BY seq",
        [inboundMessageId],
      );
      return rows.rows;
    },
    async close() {
      await t.drop();
    },
  };
}
