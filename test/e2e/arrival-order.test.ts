import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectArrivalOrder } from "../support/arrival-order";
import { startDeployment, type Deployment } from "../support/deployment";

// SPEC §3: a session's messages are handled in arrival order. A burst over many chats,
// through several agent-worker processes and a Redis wipe in the middle, must reach the
// model in each chat's order: the ingress puts a message in its lane in the statement that
// stores it, so no queue hop can reorder it.

const MESSAGES = 2_000;
const CHATS = 100;

describe("arrival order across agent-worker processes", () => {
  let d: Deployment;
  beforeAll(async () => {
    d = await startDeployment("arrival_order", ["ingress-telegram", "agent-worker", "agent-worker", "agent-worker", "delivery"], {
      NAHIDA_LEASE_MS: "3000",
      AGENT_HISTORY_TURNS: "4",
    });
    d.openai.onRequest(() => ({ content: "ok" }));
  }, 120_000);
  afterAll(async () => d?.close());

  it(`hands ${MESSAGES} messages over ${CHATS} chats to the model in each chat's arrival order, through a Redis wipe`, async () => {
    await expectArrivalOrder(d, { messages: MESSAGES, chats: CHATS, firstChat: 770_000_000 });
    expect(d.crashes).toEqual([]);
  }, 240_000);
});
