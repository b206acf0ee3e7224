import type { TypedQueue } from "@nahida/queue";

const TYPING_RENEW_MS = 4_000;
/** A model that answers faster than this shows no "typing…" at all. */
const TYPING_AFTER_MS = 500;

/**
 * "typing…" in a chat while the model works, once it has worked for TYPING_AFTER_MS: a fast
 * answer needs none, and a job per message would double the queue traffic. Platforms show
 * it for about 5 s, so it is renewed every 4 s. Best effort; a failure to enqueue it is
 * ignored. Returns the stop switch.
 */
export function showTyping(outbound: TypedQueue<"outbound">, chatAddress: string): () => void {
  const send = () => void outbound.add("chat.action", { target: chatAddress, action: "typing" }).catch(() => undefined);
  let renew: ReturnType<typeof setInterval> | undefined;
  const first = setTimeout(() => {
    send();
    renew = setInterval(send, TYPING_RENEW_MS);
  }, TYPING_AFTER_MS);
  return () => {
    clearTimeout(first);
    clearInterval(renew);
  };
}
