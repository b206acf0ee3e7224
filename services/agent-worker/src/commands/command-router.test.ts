import { describe, expect, it } from "vitest";
import { CommandRouter, parseCommand } from "./command-router";

describe("parseCommand", () => {
  it.each([
    ["/status", { name: "status", args: "" }],
    ["/Status@nahida_test_bot  now please", { name: "status", args: "now please" }],
    ["/trigger always", { name: "trigger", args: "always" }],
  ])("parses %j", (text, expected) => expect(parseCommand(text)).toEqual(expected));

  it.each(["hello", "/", "/ status", "/sta-tus", "//x"])("rejects %j", (text) => expect(parseCommand(text)).toBeNull());

  it("honours another prefix", () => expect(parseCommand("!help", "!")).toEqual({ name: "help", args: "" }));
});

describe("CommandRouter", () => {
  const router = new CommandRouter<{ who: string }>({ timeoutMs: 50 })
    .register({ name: "hi", description: "", handler: ({ context, args }) => `hi ${context.who} ${args}`.trim() })
    .register({ name: "quiet", description: "", handler: () => undefined })
    .register({ name: "slow", description: "", handler: () => new Promise((r) => setTimeout(() => r("late"), 500)) })
    .register({ name: "boom", description: "", handler: () => { throw new Error("kaput"); } });
  const signal = new AbortController().signal;

  it("runs a hit and wraps strings as text replies", async () => {
    expect(await router.run("/hi there", { who: "ann" }, signal)).toEqual({ kind: "handled", reply: { text: "hi ann there" } });
    expect(await router.run("/quiet", { who: "ann" }, signal)).toEqual({ kind: "handled", reply: null });
  });

  it("leaves unknown commands and plain text to the agent", async () => {
    expect(await router.run("/unknown", { who: "a" }, signal)).toEqual({ kind: "not_a_command" });
    expect(await router.run("hello", { who: "a" }, signal)).toEqual({ kind: "not_a_command" });
  });

  it("times out slow handlers and reports errors as replies", async () => {
    const slow = await router.run("/slow", { who: "a" }, signal);
    expect(slow).toMatchObject({ kind: "failed", error: "timed out after 50 ms" });
    const boom = await router.run("/boom", { who: "a" }, signal);
    expect(boom).toMatchObject({ kind: "failed", reply: { text: "/boom failed: kaput" } });
  });
});
