import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const DIR = fileURLToPath(new URL("../fixtures/telegram/", import.meta.url));

/** A fixture update without its update_id, so the fake Telegram assigns a fresh one. */
export function fixture(name: string): Record<string, unknown> {
  const { update_id: _ignored, ...update } = JSON.parse(readFileSync(`${DIR}${name}.json`, "utf8")) as Record<string, unknown>;
  return update;
}

let nextMessageId = 5000;

/** A private text message from a user whose chat id equals the user id. */
export function privateText(userId: number, text: string, firstName = "Alice"): Record<string, unknown> {
  return {
    message: {
      message_id: nextMessageId++,
      from: { id: userId, is_bot: false, first_name: firstName },
      chat: { id: userId, first_name: firstName, type: "private" },
      date: 1778400180,
      text,
    },
  };
}

/** A group text message; pass `entities` for mentions. */
export function groupText(chatId: number, text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    message: {
      message_id: nextMessageId++,
      from: { id: 555000111, is_bot: false, first_name: "Bob", username: "bobby" },
      chat: { id: chatId, title: "Ops room", type: "supergroup" },
      date: 1778400300,
      text,
      ...extra,
    },
  };
}
