import { Redis, ReplyError } from "ioredis";
import { describe, expect, it } from "vitest";
import { describeChannelSenderConformance, type ConformanceFailure, type DeliveredPart } from "@nahida/channels/conformance";
import { formatChatAddress, systemClock, type ChatAddress } from "@nahida/contracts";
import { TEST_REDIS_URL, testQueuePrefix } from "../../../test/support/infra";
import { chatTopic } from "./web-chat.bus";
import type { ServerFrame } from "./web-chat.protocol";
import { WebSender } from "./web.sender";

let nextVisitor = 0;
const visitorChat = (): ChatAddress => ({ channel: "web", type: "private", id: `visitor-${process.pid}-${++nextVisitor}` });

/** What Redis answers for each scripted failure; the connection error never reaches Redis. */
function redisFailure(failure: ConformanceFailure): Error {
  switch (failure.kind) {
    case "transient":
      return new ReplyError("LOADING Redis is loading the dataset in memory");
    case "permanent":
      return new ReplyError(`NOPERM ${failure.description}`);
    case "network":
      return new Error("Connection is closed.");
    case "rate_limited":
      throw new Error("Redis does not rate-limit a publish");
  }
}

/**
 * A real Redis under the sender, and a subscriber standing in for the gateway replica that
 * holds the page's socket: what it receives is what the platform accepted. Failures are
 * scripted at the client, as the answers Redis (or a dropped connection) gives.
 */
async function webSubject() {
  const prefix = testQueuePrefix("web-sender");
  const publisher = new Redis(TEST_REDIS_URL);
  const subscriber = new Redis(TEST_REDIS_URL);
  const received = new Map<string, ServerFrame[]>();
  await subscriber.psubscribe(`${prefix}:webchat:*`);
  subscriber.on("pmessage", (_pattern: string, topic: string, payload: string) => {
    received.set(topic, [...(received.get(topic) ?? []), JSON.parse(payload) as ServerFrame]);
  });
  const scripted = new Map<string, { on: "text" | "attachment"; failure: ConformanceFailure }[]>();
  const publish = publisher.publish.bind(publisher);
  publisher.publish = (async (topic: string, payload: string) => {
    const frame = JSON.parse(payload) as ServerFrame;
    const kind = frame.type === "message" && frame.item.attachment ? "attachment" : "text";
    const queue = scripted.get(topic) ?? [];
    const at = queue.findIndex((s) => s.on === kind);
    if (at >= 0) throw redisFailure(queue.splice(at, 1)[0]!.failure);
    const listeners = await publish(topic, payload);
    // Handed to Redis; wait until the stand-in replica has it, as a socket would.
    while (!(received.get(topic) ?? []).some((f) => JSON.stringify(f) === payload)) await new Promise((r) => setTimeout(r, 2));
    return listeners;
  }) as typeof publisher.publish;
  const sender = new WebSender({ channel: "web", redis: publisher, prefix, clock: systemClock });
  return {
    prefix,
    sender,
    received: (target: ChatAddress) => received.get(chatTopic(prefix, formatChatAddress(target))) ?? [],
    script(target: ChatAddress, on: "text" | "attachment", failure: ConformanceFailure) {
      const topic = chatTopic(prefix, formatChatAddress(target));
      scripted.set(topic, [...(scripted.get(topic) ?? []), { on, failure }]);
    },
    async close() {
      publisher.disconnect();
      subscriber.disconnect();
    },
  };
}

describeChannelSenderConformance(
  "WebSender",
  async () => {
    const s = await webSubject();
    return {
      sender: s.sender,
      newTarget: visitorChat,
      attachments: [
        { type: "document", url: "https://files.example.com/invoice.pdf", filename: "invoice.pdf" },
        { type: "photo", url: "https://files.example.com/conformance.png", caption: "the chart" },
      ],
      multiPartText: Array.from({ length: 300 }, (_, i) => `Line ${i}: some **bold** words and \`code\`.`).join("\n"),
      failNext: (target, on, failure) => s.script(target, on, failure),
      async delivered(target) {
        return s.received(target).flatMap((frame): DeliveredPart[] =>
          frame.type === "message" ? [{ kind: frame.item.attachment ? "attachment" : "text", platformMessageId: frame.item.id, ...(frame.item.attachment ? {} : { text: frame.item.text }) }] : [],
        );
      },
      secrets: [],
      close: () => s.close(),
    };
  },
  { failures: ["transient", "network", "permanent"] },
);

describe("WebSender", () => {
  it("names each part after the delivery, so a resend after an unknown outcome is the same part to the page", async () => {
    const s = await webSubject();
    try {
      const target = visitorChat();
      const ids: string[] = [];
      const progress = { deliveryId: "5d0c9a8e-0000-4000-8000-000000000001", sentParts: 0, recordPart: async (_i: number, id: string) => void ids.push(id) };
      await s.sender.send(target, { text: "one", attachments: [{ type: "photo", url: "https://x.example/a.png" }], extra: {} }, progress);
      expect(ids).toEqual([`${progress.deliveryId}:0`, `${progress.deliveryId}:1`]);
      await s.sender.sendChatAction(target);
      expect(s.received(target).map((f) => f.type)).toEqual(["message", "message", "typing"]);
    } finally {
      await s.close();
    }
  });
});
