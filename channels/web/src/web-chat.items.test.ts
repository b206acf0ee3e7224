import { describe, expect, it } from "vitest";
import type { ChatTranscriptEntry } from "@nahida/contracts";
import { transcriptItems } from "./web-chat.items";
import { visitorCookieAttributes } from "./web-chat.routes";

const AT = new Date("2026-12-02T10:00:00Z");
const key = (id: string) => `key-of-${id}`;
const answer = { text: "first", attachments: [{ type: "photo", url: "https://x.example/a.png" }, { type: "document", url: "https://x.example/b.pdf", filename: "b.pdf" }], extra: {} };
const delivery = (status: string, sentParts: number): ChatTranscriptEntry => ({ direction: "out", id: `d-${status}`, message: answer, at: AT, status, sentParts });

describe("a chat's transcript as the page shows it", () => {
  it("shows of each delivery the parts the visitor may have seen, with the ids the live frames had", () => {
    expect(transcriptItems([delivery("sent", 3)], key).map((i) => i.id)).toEqual(["d-sent:0", "d-sent:1", "d-sent:2"]);
    // Being sent: the part in flight may be on a page already.
    expect(transcriptItems([delivery("sending", 1)], key).map((i) => i.id)).toEqual(["d-sending:0", "d-sending:1"]);
    // Back to waiting (a passing Redis refusal) or failed after a part went out: that part stays.
    expect(transcriptItems([delivery("queued", 1)], key).map((i) => i.id)).toEqual(["d-queued:0"]);
    expect(transcriptItems([delivery("failed", 2)], key).map((i) => i.id)).toEqual(["d-failed:0", "d-failed:1"]);
  });

  it("names a visitor's message by the sender's key, never their id, and leaves out a row that no longer parses", () => {
    const inbound: ChatTranscriptEntry = {
      direction: "in",
      id: "m-1",
      message: { messageId: "m-1", channel: "web", chat: "web:group:lobby", sender: { id: "customer@example.com", displayName: "Lena", label: "Lena" }, text: "hi", timestamp: AT.toISOString() },
      at: AT,
      status: "received",
      sentParts: 0,
    };
    const items = transcriptItems([inbound, { ...inbound, message: { broken: true } }], key);
    expect(items).toEqual([{ id: "key-of-customer@example.com:m-1", from: "visitor", sender: { key: "key-of-customer@example.com", name: "Lena" }, text: "hi", at: AT.toISOString() }]);
  });
});

describe("an anonymous visitor's cookie", () => {
  it("is sent in an embedding site's frame only over HTTPS, partitioned by that site", () => {
    expect(visitorCookieAttributes(true, true)).toBe("SameSite=None; Secure; Partitioned");
    expect(visitorCookieAttributes(true, false)).toBe("SameSite=Lax; Secure");
    expect(visitorCookieAttributes(false, true)).toBe("SameSite=Lax");
  });
});
