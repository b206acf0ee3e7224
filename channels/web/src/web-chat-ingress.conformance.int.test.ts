import { describeIngressConformance, readIngressFixtures } from "@nahida/ingress/conformance";
import { normalizeWebChatEvent } from "./web-chat.normalizer";

const fixtures = readIngressFixtures(new URL("../../../test/fixtures/web/", import.meta.url), new Set(["blank-message"]));

/** Edits where web events vary: a room or none, the visitor, the frame's id and text. */
function mutateEvent(event: unknown, random: () => number): unknown {
  const pick = <T,>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const e = event as { visitor?: Record<string, unknown>; frame?: Record<string, unknown> };
  switch (pick(["room", "visitor", "id", "text"] as const)) {
    case "room":
      if (e.visitor) e.visitor["room"] = pick([undefined, "lobby", "a:b", "", "x".repeat(65)]);
      break;
    case "visitor":
      if (e.visitor) e.visitor["id"] = pick(["anon-AAAAAAAAAAAAAAAA", "with space", "a:b", "", "x".repeat(65), 42]);
      break;
    case "id":
      if (e.frame) e.frame["id"] = pick(["short", "ok-id-12345678", "../../etc", "x".repeat(65)]);
      break;
    case "text":
      if (e.frame) e.frame["text"] = pick(["", "/cron list", "x".repeat(4_001), "\u0000", "@bot hi"]);
      break;
  }
  return e;
}

for (const channel of ["web", "web_shop"]) {
  describeIngressConformance({
    channel,
    accountId: channel,
    normalize: (event) => normalizeWebChatEvent(event, { channel }),
    fixtures,
    mutate: mutateEvent,
  });
}
