import { describe, expect, it } from "vitest";
import { readTurn } from "./turns";

describe("readTurn", () => {
  it("reads each role's metadata, extra keys kept", () => {
    expect(readTurn({ role: "tool", metadata: { tool_call_id: "c1", name: "t", extra: 1 } })).toEqual({
      ok: true,
      value: { role: "tool", metadata: { tool_call_id: "c1", name: "t", extra: 1 } },
    });
    expect(readTurn({ role: "assistant", metadata: {} })).toMatchObject({ ok: true, value: { role: "assistant" } });
    expect(readTurn({ role: "user", metadata: null })).toMatchObject({ ok: true, value: { role: "user", metadata: {} } });
    expect(readTurn({ role: "event", metadata: { kind: "agent_event", event_id: "e", mode: "enqueue", depth: 1, from_session_id: null } })).toMatchObject({
      ok: true,
      value: { role: "event", metadata: { kind: "agent_event" } },
    });
  });

  it("an unknown role or event kind, or metadata of the wrong shape, is an error with its reason", () => {
    expect(readTurn({ role: "narrator", metadata: {} })).toEqual({ ok: false, error: 'unknown turn role "narrator"; known: user, assistant, tool, system, event' });
    expect(readTurn({ role: "event", metadata: { kind: "gossip" } })).toMatchObject({ ok: false, error: expect.stringMatching(/^event turn: kind: /) });
    expect(readTurn({ role: "tool", metadata: { name: "t" } })).toMatchObject({ ok: false, error: expect.stringMatching(/^tool turn: tool_call_id: /) });
  });
});
