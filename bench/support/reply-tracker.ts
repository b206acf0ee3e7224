import type { FakeOpenAI, FakeOpenAIRequest } from "../../test/fakes/openai.fake";
import type { FakeTelegram } from "../../test/fakes/telegram-bot-api.fake";

const MESSAGE_MARKER = /\bzq(\d+)\b/g;
const REPLY_MARKER = /\bzr(\d+)\b/;

/** The text of a message the bench sends: carries marker `zq<n>`. */
export const messageText = (marker: number) => `zq${marker} hello`;

/**
 * Correlates webhook POSTs with the sendMessage that answers them. The fake LLM answers
 * every request with a fresh reply marker `zr<n>` and remembers which message markers that
 * request was the first to carry unanswered (its batch: in `collect` mode one run answers
 * every message that queued up in its chat, and history repeats older ones). A message counts
 * as answered when the first sendMessage carrying a reply marker whose batch holds it reaches
 * the fake Telegram. A retried run that got no new markers still finds its batch, because a
 * marker stays in every later batch until it is answered.
 */
export class ReplyTracker {
  private readonly postTimes = new Map<number, number>();
  private readonly answeredAt = new Map<number, number>();
  private readonly batches = new Map<number, number[]>();
  private nextReply = 1;
  private scanned = 0;
  /** sendMessage calls that carried a reply marker. */
  replies = 0;

  constructor(
    private readonly telegram: FakeTelegram,
    private readonly openai: FakeOpenAI,
  ) {
    this.listen();
  }

  /** Forgets the fake LLM's recorded requests (their bodies hold whole histories). */
  dropRecordedRequests(): void {
    this.openai.reset();
    this.listen();
  }

  posted(marker: number, at: number): void {
    this.postTimes.set(marker, at);
  }

  /** When a marker's message was posted (ms since the epoch). */
  postedAt(marker: number): number | undefined {
    return this.postTimes.get(marker);
  }

  answered(marker: number): number | undefined {
    return this.answeredAt.get(marker);
  }

  /** Resolves once every marker is answered; rejects after `timeoutMs`. */
  async waitAnswered(markers: readonly number[], timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      this.scan();
      const missing = markers.filter((m) => !this.answeredAt.has(m));
      if (missing.length === 0) return;
      if (Date.now() > deadline) throw new Error(`${missing.length} of ${markers.length} messages unanswered after ${timeoutMs} ms (first: zq${missing[0]})`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** POST-to-sendMessage latencies of some answered markers, ascending, in ms. */
  latencies(markers: readonly number[]): number[] {
    return markers.map((m) => this.answeredAt.get(m)! - this.postTimes.get(m)!).sort((a, b) => a - b);
  }

  private listen(): void {
    this.openai.onRequest((request) => ({ content: `ok zr${this.assign(request)}` }));
  }

  private assign(request: FakeOpenAIRequest): number {
    const markers = new Set<number>();
    for (const message of request.body.messages) {
      if (message.role !== "user") continue;
      const text = typeof message.content === "string" ? message.content : JSON.stringify(message.content);
      for (const match of text.matchAll(MESSAGE_MARKER)) markers.add(Number(match[1]));
    }
    const id = this.nextReply++;
    this.batches.set(id, [...markers].filter((m) => !this.answeredAt.has(m)));
    return id;
  }

  private scan(): void {
    const calls = this.telegram.calls;
    for (; this.scanned < calls.length; this.scanned++) {
      const call = calls[this.scanned]!;
      if (call.method.toLowerCase() !== "sendmessage") continue;
      const match = REPLY_MARKER.exec(String(call.params.text ?? ""));
      if (!match) continue;
      this.replies++;
      const id = Number(match[1]);
      for (const marker of this.batches.get(id) ?? []) if (!this.answeredAt.has(marker)) this.answeredAt.set(marker, call.at.getTime());
      this.batches.delete(id);
    }
  }
}
