import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../agent/llm.client";
import { createContextBuilder, keepToolResultsAdjacent } from "./context-builder";

const call = (id: string): ChatMessage => ({ role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "t", arguments: "{}" } }] });
const result = (id: string): ChatMessage => ({ role: "tool", tool_call_id: id, content: "{}" });

describe("keepToolResultsAdjacent", () => {
  it("moves an event stored between a tool call and its result after the result", () => {
    const event: ChatMessage = { role: "system", content: "[api] maintenance" };
    expect(keepToolResultsAdjacent([{ role: "user", content: "q" }, call("a"), event, result("a"), { role: "assistant", content: "done" }])).toEqual([
      { role: "user", content: "q" },
      call("a"),
      result("a"),
      event,
      { role: "assistant", content: "done" },
    ]);
  });

  it("drops tool results without their call and leaves ordinary histories alone", () => {
    const plain: ChatMessage[] = [{ role: "user", content: "a" }, { role: "assistant", content: "b" }];
    expect(keepToolResultsAdjacent([result("x"), ...plain])).toEqual(plain);
    expect(keepToolResultsAdjacent([call("a"), result("a"), call("b"), result("b")])).toEqual([call("a"), result("a"), call("b"), result("b")]);
  });
});

describe("createContextBuilder: stored turns read once", () => {
  const envelope = { renderUserTurn: (_context: unknown, text: string) => `[env] ${text}` } as unknown as Parameters<typeof createContextBuilder>[0]["envelope"];

  it("renders what it can read and reports each turn it cannot, with the reason", async () => {
    const unreadable: string[] = [];
    const builder = createContextBuilder({ envelope, systemPrompt: "sys", onUnreadableTurn: (turn, reason) => unreadable.push(`${turn.id}: ${reason}`) });
    const messages = await builder.build(
      [
        { id: "u1", role: "user", content: "hi", metadata: { message_context: { broken: true } } },
        { id: "a1", role: "assistant", content: "", metadata: { tool_calls: [{ id: "c1", type: "function", function: { name: "t", arguments: "{}" } }] } },
        { id: "t1", role: "tool", content: "{}", metadata: { tool_call_id: "c1" } },
        { id: "x1", role: "narrator", content: "once upon a time", metadata: {} },
        { id: "e1", role: "event", content: "gossip", metadata: { kind: "gossip" } },
      ],
      [{ role: "user", content: "and now?", metadata: {} }],
    );
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["system", "sys"],
      ["user", "hi"],
      ["assistant", null],
      ["tool", "{}"],
      ["user", "and now?"],
    ]);
    expect(unreadable).toEqual([expect.stringMatching(/^x1: unknown turn role "narrator"/), expect.stringMatching(/^e1: event turn: kind: /)]);
  });
});
