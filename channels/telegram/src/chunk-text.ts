import { chunkText } from "@nahida/text";

/** Telegram's limit on a message's text, in UTF-16 code units after entity parsing. */
export const TELEGRAM_TEXT_LIMIT = 4096;

/**
 * `chunkText` in Telegram's unit, UTF-16 code units (JavaScript's `length`), under
 * Telegram's limit unless told otherwise.
 * @param limit maximum chunk length in UTF-16 code units, an integer ≥ 2 (default 4096)
 */
export function chunkTelegramText(text: string, limit: number = TELEGRAM_TEXT_LIMIT): string[] {
  return chunkText(text, limit);
}
