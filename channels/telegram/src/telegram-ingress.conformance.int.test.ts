import { describeIngressConformance, readIngressFixtures } from "@nahida/ingress/conformance";
import { normalizeTelegramEvent } from "./telegram-update.handler";

const IGNORED = new Set(["callback-query", "edited-message"]);
const BOT = { id: 7000000001, username: "nahida_test_bot" };

const fixtures = readIngressFixtures(new URL("../../../test/fixtures/telegram/", import.meta.url), IGNORED);

const UPDATE_KINDS = ["message", "channel_post", "edited_message", "business_message", "callback_query"];
const CHAT_TYPES = ["private", "group", "supergroup", "channel", "forum"];
const ENTITY_TYPES = ["bot_command", "mention", "text_mention", "bold"];

/** Edits where Telegram's shapes vary: the update kind, the chat type, entities and forum topics. */
function mutateUpdate(event: unknown, random: () => number): unknown {
  const pick = <T,>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const update = event as Record<string, unknown>;
  const kind = UPDATE_KINDS.find((k) => update[k] !== undefined);
  if (kind === undefined) return update;
  const message = update[kind] as Record<string, unknown>;
  switch (pick(["kind", "chat", "entities", "topic"] as const)) {
    case "kind":
      delete update[kind];
      update[pick(UPDATE_KINDS)] = message;
      break;
    case "chat":
      message["chat"] = { ...(message["chat"] as object), type: pick(CHAT_TYPES) };
      break;
    case "entities": {
      const textLength = typeof message["text"] === "string" ? message["text"].length : 8;
      message["entities"] = Array.from({ length: 1 + Math.floor(random() * 3) }, () => ({
        type: pick(ENTITY_TYPES),
        offset: Math.floor(random() * (textLength + 2)),
        length: Math.floor(random() * (textLength + 2)),
        ...(random() < 0.5 && { user: { id: BOT.id } }),
      }));
      break;
    }
    case "topic":
      message["is_topic_message"] = random() < 0.5;
      message["message_thread_id"] = pick([1, 42, -1, "42"]);
      break;
  }
  return update;
}

for (const channel of ["telegram", "telegram_ops"]) {
  describeIngressConformance({
    channel,
    accountId: String(BOT.id),
    normalize: (event) => normalizeTelegramEvent(event, BOT, { channel }),
    fixtures,
    mutate: mutateUpdate,
  });
}
