import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../agent/llm.client";
import { keepToolResultsAdjacent } from "./context-builder";

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
