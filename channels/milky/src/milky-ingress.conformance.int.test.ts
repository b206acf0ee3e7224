import { describeIngressConformance, readIngressFixtures } from "@nahida/ingress/conformance";
import { normalizeMilkyEvent } from "./milky.normalizer";

const IGNORED = new Set(["unknown-event"]);
const SELF_ID = 3000000001;

const fixtures = readIngressFixtures(new URL("../../../test/fixtures/milky/", import.meta.url), IGNORED);

const EVENT_TYPES = ["message_receive", "message_recall", "friend_nudge", "bot_offline", "group_file_upload"];
const SCENES = ["friend", "group", "temp", "channel"];
const SEGMENT_TYPES = ["text", "mention", "mention_all", "reply", "image", "record", "video", "file", "face", "market_face", "forward", "light_app", "xml", "holo_sticker"];

/** Edits where Milky's shapes vary: the event type, the scene, segment types and their data, the self id. */
function mutateEvent(event: unknown, random: () => number): unknown {
  const pick = <T,>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const e = event as Record<string, unknown>;
  const data = e["data"] as Record<string, unknown> | undefined;
  switch (pick(["type", "scene", "segment", "self"] as const)) {
    case "type":
      e["event_type"] = pick(EVENT_TYPES);
      break;
    case "scene":
      if (data) data["message_scene"] = pick(SCENES);
      break;
    case "segment": {
      const segments = Array.isArray(data?.["segments"]) ? (data["segments"] as unknown[]) : undefined;
      if (!segments) break;
      const type = pick(SEGMENT_TYPES);
      const sources = segments.filter((s): s is { data: unknown } => typeof s === "object" && s !== null && "data" in s);
      segments.splice(Math.floor(random() * (segments.length + 1)), 0, {
        type,
        data: random() < 0.5 && sources.length > 0 ? structuredClone(pick(sources).data) : { user_id: SELF_ID, message_seq: 1, resource_id: "r", file_id: "f", text: "t" },
      });
      break;
    }
    case "self":
      if (data) data["sender_id"] = pick([SELF_ID, e["self_id"], 10001, 0]);
      break;
  }
  return e;
}

for (const channel of ["milky", "milky_ops"]) {
  describeIngressConformance({
    channel,
    accountId: String(SELF_ID),
    normalize: (event) => normalizeMilkyEvent(event, { selfId: SELF_ID, channel }),
    fixtures,
    mutate: mutateEvent,
  });
}
