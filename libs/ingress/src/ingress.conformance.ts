import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InboundMessage, MessageContext, parseChatAddress } from "@nahida/contracts";
import { mulberry32 } from "../../../test/support/seeded-random";
import { cleanEvent, type IntakeCandidate, type NormalizedEvent } from "./intake";
import { startIntakeHarness, type IntakeHarness } from "./intake-harness";

/** A real-shaped platform event and what the adapter must make of it. */
export interface IngressFixture {
  name: string;
  /** As the platform delivers it (parsed JSON). */
  event: unknown;
  expect: "message" | "ignored";
}

/**
 * The `*.json` fixtures of a directory, by name without the extension, in name order; the
 * ones named in `ignored` are expected to be ignored, every other one to be a message.
 */
export function readIngressFixtures(directory: URL, ignored: ReadonlySet<string>): IngressFixture[] {
  const dir = fileURLToPath(directory);
  return readdirSync(dir)
    .filter((file) => file.endsWith(".json"))
    .sort()
    .map((file) => {
      const name = file.slice(0, -".json".length);
      return { name, event: JSON.parse(readFileSync(`${dir}/${file}`, "utf8")) as unknown, expect: ignored.has(name) ? "ignored" : "message" };
    });
}

/** What an adapter's test provides to {@link describeIngressConformance}. */
export interface IngressConformanceSubject {
  /** The channel instance name the adapter was built with. */
  channel: string;
  /** The account the fixtures are delivered to. */
  accountId: string;
  /** The adapter's normalizer, exactly as its ingress calls it before `intake.accept`. */
  normalize(event: unknown): NormalizedEvent;
  /** At least one must be a message. */
  fixtures: readonly IngressFixture[];
  /** Platform-aware edits (an unknown segment type, say), fuzzed besides the suite's own JSON edits. */
  mutate?: (event: unknown, random: () => number) => unknown;
}

const MUTATIONS_PER_FIXTURE = 150;

const ODD_VALUES: readonly unknown[] = [null, 0, -1, 1.5, 2 ** 53, Number.NaN, "", "\u0000", "\ud800", "x".repeat(10_000), true, [], {}, [null], { "": null }];

function nested(depth: number): unknown {
  let value: unknown = {};
  for (let i = 0; i < depth; i++) value = { a: value, b: [value] };
  return value;
}

const GARBAGE: readonly [string, unknown][] = [
  ["undefined", undefined],
  ["null", null],
  ["zero", 0],
  ["NaN", Number.NaN],
  ["an empty string", ""],
  ["a JSON string", '{"text":"hi"}'],
  ["true", true],
  ["an empty array", []],
  ["[null]", [null]],
  ["an empty object", {}],
  ["an object with an empty key", { "": "" }],
  ["a deeply nested object", nested(64)],
];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

type Path = (string | number)[];

function pathsOf(value: unknown, at: Path = [], out: Path[] = []): Path[] {
  out.push(at);
  if (Array.isArray(value)) value.forEach((item, index) => pathsOf(item, [...at, index], out));
  else if (isRecord(value)) for (const [key, item] of Object.entries(value)) pathsOf(item, [...at, key], out);
  return out;
}

function valueAt(root: unknown, path: Path): unknown {
  return path.reduce<unknown>((node, key) => (node as Record<string | number, unknown>)[key], root);
}

/** Replaces (or, with `remove`, deletes) the value at `path`; returns the new root. */
function withValueAt(root: unknown, path: Path, value: unknown, remove = false): unknown {
  if (path.length === 0) return value;
  const parent = valueAt(root, path.slice(0, -1)) as Record<string | number, unknown> | unknown[];
  const key = path[path.length - 1]!;
  if (remove && Array.isArray(parent)) parent.splice(key as number, 1);
  else if (remove) delete (parent as Record<string | number, unknown>)[key];
  else (parent as Record<string | number, unknown>)[key] = value;
  return root;
}

/** One to three random edits of a JSON value: a field removed, retyped, moved, cut or given a NUL. */
function mutateJson(event: unknown, random: () => number): unknown {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  let root = structuredClone(event);
  const edits = 1 + Math.floor(random() * 3);
  for (let i = 0; i < edits; i++) {
    const paths = pathsOf(root);
    const path = pick(paths);
    const current = valueAt(root, path);
    const edit = pick(["remove", "odd", "swap", "tweak"] as const);
    if (edit === "remove") root = withValueAt(root, path, undefined, true);
    else if (edit === "odd") root = withValueAt(root, path, structuredClone(pick(ODD_VALUES)));
    else if (edit === "swap") root = withValueAt(root, path, structuredClone(valueAt(root, pick(paths))));
    else if (typeof current === "string") {
      const at = Math.floor(random() * (current.length + 1));
      root = withValueAt(root, path, random() < 0.5 ? `${current.slice(0, at)}\u0000${current.slice(at)}` : current.slice(0, at));
    } else if (typeof current === "number") root = withValueAt(root, path, random() < 0.5 ? -current : current + 0.5);
    else root = withValueAt(root, path, [current]);
  }
  return root;
}

/** Adds `key: value` to every object inside `value`. */
function withKeyEverywhere(value: unknown, key: string, added: string): unknown {
  if (Array.isArray(value)) return value.map((item) => withKeyEverywhere(item, key, added));
  if (!isRecord(value)) return value;
  const copy = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withKeyEverywhere(v, key, added)]));
  return { ...copy, [key]: added };
}

/**
 * The contract every channel's ingress adapter keeps: its normalizer is pure and total,
 * turns each platform event into a valid message of its own channel instance or names why
 * it is ignored, keys each event distinctly, and keeps the raw event out of the message;
 * and its candidates go through the real intake: stored once per account, NUL-free.
 */
export function describeIngressConformance(subject: IngressConformanceSubject): void {
  const { channel } = subject;

  function normalizeSafely(event: unknown, label: string): NormalizedEvent {
    let result: NormalizedEvent | undefined;
    expect(() => {
      result = subject.normalize(event);
    }, `${label}: normalize threw`).not.toThrow();
    return result!;
  }

  function expectWellFormed(result: NormalizedEvent, label: string): void {
    expect(["message", "ignored", "unreadable"], label).toContain(result.kind);
    if (result.kind === "ignored" || result.kind === "unreadable") {
      expect(typeof result.reason, label).toBe("string");
      expect(result.reason.trim(), `${label}: an event not taken needs a reason`).not.toBe("");
      return;
    }
    expect(typeof result.dedupeKey === "string" && result.dedupeKey !== "", `${label}: dedupeKey`).toBe(true);
    const message = InboundMessage.safeParse(result.message);
    expect(message.success, `${label}: ${message.error?.message}`).toBe(true);
    const context = MessageContext.safeParse(result.context);
    expect(context.success, `${label}: ${context.error?.message}`).toBe(true);
    const address = parseChatAddress(result.message.chat);
    expect(address.ok && address.value.channel, `${label}: chat ${result.message.chat}`).toBe(channel);
    expect(result.message.channel, label).toBe(channel);
    expect(result.context.channel, label).toBe(channel);
    expect(result.message, label).not.toHaveProperty("raw");
  }

  function candidateOf(result: NormalizedEvent, accountId = subject.accountId): IntakeCandidate {
    if (result.kind !== "message") throw new Error(`expected a message, got ignored: ${result.reason}`);
    const { kind: _kind, ...rest } = result;
    return { channel, accountId, ...rest };
  }

  const messageFixtures = subject.fixtures.filter((f) => f.expect === "message");

  describe(`Ingress conformance: ${channel}`, () => {
    it("has at least one message fixture", () => {
      expect(messageFixtures.length).toBeGreaterThan(0);
    });

    it.each(subject.fixtures.map((f) => [f.name, f] as const))("normalizes the %s fixture as expected", (name, fixture) => {
      const result = normalizeSafely(fixture.event, name);
      expect(result.kind, result.kind === "ignored" ? result.reason : name).toBe(fixture.expect);
      expectWellFormed(result, name);
    });

    it("is deterministic and leaves the event untouched", () => {
      for (const fixture of subject.fixtures) {
        const before = structuredClone(fixture.event);
        const first = normalizeSafely(fixture.event, fixture.name);
        expect(normalizeSafely(structuredClone(fixture.event), fixture.name), fixture.name).toEqual(first);
        expect(fixture.event, `${fixture.name} was modified`).toStrictEqual(before);
      }
    });

    it.each(GARBAGE)("does not take %s as a message, and says why", (label, garbage) => {
      const result = normalizeSafely(garbage, label);
      // Garbage is not a message: ignored, or quarantined by the intake as unreadable (malformed, too deep).
      expect(["ignored", "unreadable"], label).toContain(result.kind);
      expectWellFormed(result, label);
      expect(normalizeSafely(garbage, label)).toEqual(result);
    });

    it("never throws on seeded random mutations of the fixtures, and what it returns is well formed", () => {
      const mutators: [string, (event: unknown, random: () => number) => unknown][] = [["json", mutateJson]];
      if (subject.mutate) mutators.push(["subject", subject.mutate]);
      subject.fixtures.forEach((fixture, index) => {
        for (const [mutatorName, mutate] of mutators) {
          const seed = 0x1e55 + index;
          const random = mulberry32(seed);
          for (let i = 0; i < MUTATIONS_PER_FIXTURE; i++) {
            const event = mutate(structuredClone(fixture.event), random);
            const label = `${fixture.name}, ${mutatorName} mutation ${i} of seed ${seed}`;
            const result = normalizeSafely(event, label);
            expectWellFormed(result, label);
            expect(normalizeSafely(event, label), `${label}: not deterministic`).toEqual(result);
          }
        }
      });
    });

    it("gives distinct fixture events distinct dedupe keys", () => {
      const keys = messageFixtures.map((f) => candidateOf(subject.normalize(f.event)).dedupeKey);
      expect(new Set(keys).size).toBe(keys.length);
    });

    it("tolerates unknown fields and keeps the raw event out of the message", () => {
      const canary = "nahida-raw-canary-7f3a";
      for (const fixture of subject.fixtures) {
        const event = withKeyEverywhere(fixture.event, "nahida_conformance_canary", canary);
        const result = normalizeSafely(event, fixture.name);
        expect(result.kind, fixture.name).toBe(fixture.expect);
        if (result.kind !== "message") continue;
        expect(JSON.stringify([result.message, result.context]), fixture.name).not.toContain(canary);
        // The raw event is what the ledger keeps for audit.
        expect(JSON.stringify(result.raw), fixture.name).toContain(canary);
      }
    });

    describe("through the intake", () => {
      let h: IntakeHarness;
      beforeAll(async () => {
        h = await startIntakeHarness(`ingress_${channel}`);
      }, 60_000);
      afterAll(async () => {
        await h?.close();
      });

      it("stores an event delivered twice once, in its lane at most once, waking the lane only for the first", async () => {
        const event = messageFixtures[0]!.event;
        const first = await h.intake.accept(candidateOf(subject.normalize(event)));
        const itemsAfterFirst = first.kind === "stored" ? await h.laneItemsOf(first.inboundMessageId) : [];
        const wakesAfterFirst = h.wakes.length;
        const second = await h.intake.accept(candidateOf(subject.normalize(structuredClone(event))));
        expect(first.kind).toBe("stored");
        if (first.kind !== "stored") return;
        expect(second).toEqual({ kind: "duplicate", inboundMessageId: first.inboundMessageId });
        expect(itemsAfterFirst.length).toBeLessThanOrEqual(1);
        expect(await h.laneItemsOf(first.inboundMessageId)).toEqual(itemsAfterFirst);
        expect(h.wakes.length).toBe(wakesAfterFirst);
      });

      it("removes NUL characters from the message, its context and the raw event before storing", async () => {
        const normalized = candidateOf(subject.normalize(messageFixtures[0]!.event), `${subject.accountId}-nul`);
        const candidate: IntakeCandidate = {
          ...normalized,
          message: { ...normalized.message, text: `bad\u0000byte ${normalized.message.text}` },
          context: { ...normalized.context, senderLabel: `${normalized.context.senderLabel}\u0000` },
          raw: { event: normalized.raw, note: "nul\u0000here" },
        };
        const outcome = await h.intake.accept(candidate);
        expect(outcome.kind).toBe("stored");
        if (outcome.kind !== "stored") return;
        const row = await h.inbound.get(outcome.inboundMessageId);
        const clean = <T>(value: T): T => {
          const cleaned = cleanEvent(value);
          if (!cleaned.ok) throw new Error(cleaned.error);
          return cleaned.value;
        };
        expect(row?.message.text).toBe(`badbyte ${clean(normalized.message.text)}`);
        expect(row?.context.senderLabel).toBe(clean(normalized.context.senderLabel));
        const raw = await h.t.db.pool.query("SELECT raw FROM inbound_messages WHERE id = $1", [outcome.inboundMessageId]);
        expect(raw.rows[0].raw).toEqual(clean(JSON.parse(JSON.stringify(candidate.raw))));
      });

      it("stores the same dedupe key under another account separately", async () => {
        const event = messageFixtures[0]!.event;
        const ours = await h.intake.accept(candidateOf(subject.normalize(event)));
        const theirs = await h.intake.accept(candidateOf(subject.normalize(event), `${subject.accountId}-other`));
        expect(["stored", "duplicate"]).toContain(ours.kind);
        expect(theirs.kind).toBe("stored");
        if (ours.kind === "ignored" || ours.kind === "quarantined" || theirs.kind !== "stored") return;
        expect(theirs.inboundMessageId).not.toBe(ours.inboundMessageId);
        // Routed like any new event: into the lane exactly when the first one was.
        expect((await h.laneItemsOf(theirs.inboundMessageId)).length).toBe((await h.laneItemsOf(ours.inboundMessageId)).length);
      });
    });
  });
}
