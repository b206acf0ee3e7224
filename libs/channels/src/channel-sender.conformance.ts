import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Attachment, ChatAddress, OutboundMessage } from "@nahida/contracts";
import { ChannelSendError, type ChannelErrorKind, type ChannelSender, type SendProgress } from "./channel-sender";

/** A failure the platform double answers the next matching call with. */
export type ConformanceFailure =
  | { kind: "rate_limited"; retryAfterSeconds: number }
  /** A 5xx, or whatever the platform calls "try again later". */
  | { kind: "transient" }
  /** The connection drops without an answer. */
  | { kind: "network" }
  | { kind: "permanent"; description: string };

/** A part the platform accepted, as its double saw it. */
export interface DeliveredPart {
  kind: "text" | "attachment";
  /** The id the platform answered with for this part. */
  platformMessageId: string;
  /** The text shown, for text parts. */
  text?: string;
}

/** What an adapter's test provides to {@link describeChannelSenderConformance}. */
export interface ChannelSenderConformanceSubject {
  sender: ChannelSender;
  /** A chat no other test of the suite uses, so counts and scripted failures never mix. */
  newTarget(): ChatAddress;
  /** Two attachments the platform accepts as they are (platform file ids, URLs): no workspace involved. */
  attachments: readonly [Attachment, Attachment];
  /** Text the adapter splits into at least two parts. */
  multiPartText: string;
  /** Parts the platform accepted for `target`, in arrival order. */
  delivered(target: ChatAddress): Promise<DeliveredPart[]>;
  /** Makes the platform fail the next send of a text part, or of an attachment part, to `target`. */
  failNext(target: ChatAddress, on: "text" | "attachment", failure: ConformanceFailure): void;
  /** The platform's `error_code` for each failure kind, where the platform has such codes. */
  errorCodes?: Partial<Record<ChannelErrorKind, number>>;
  /** Strings that must never appear in an error (tokens, secrets). */
  secrets: readonly string[];
  close(): Promise<void>;
}

interface Recorder {
  progress: SendProgress;
  recorded: [index: number, platformMessageId: string][];
  /** Indexes recorded as the message's last part. */
  lastParts: number[];
}

function recorder(sentParts = 0): Recorder {
  const recorded: [number, string][] = [];
  const lastParts: number[] = [];
  return {
    recorded,
    lastParts,
    progress: {
      deliveryId: randomUUID(),
      sentParts,
      async recordPart(index, platformMessageId, last) {
        recorded.push([index, platformMessageId]);
        if (last) lastParts.push(index);
      },
    },
  };
}

function message(text: string, attachments: Attachment[] = []): OutboundMessage {
  return { text, attachments, extra: {} };
}

async function sendFailing(sender: ChannelSender, target: ChatAddress, outbound: OutboundMessage, progress: SendProgress): Promise<ChannelSendError> {
  const error = await sender.send(target, outbound, progress).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "send should have thrown").toBeDefined();
  expect(error).toBeInstanceOf(ChannelSendError);
  const failure = error as ChannelSendError;
  expect(failure.name).toBe("ChannelSendError");
  return failure;
}

const FAILURES: [string, ConformanceFailure, ChannelErrorKind][] = [
  ["rate limit", { kind: "rate_limited", retryAfterSeconds: 3 }, "rate_limited"],
  ["server error", { kind: "transient" }, "transient"],
  ["dropped connection", { kind: "network" }, "transient"],
  ["rejection", { kind: "permanent", description: "Bad Request: chat not found" }, "permanent"],
];

/**
 * The contract every {@link ChannelSender} adapter keeps, run against the adapter with a
 * fake of its platform: parts go out in order, each is recorded once with the platform's
 * id, a send resumes after `progress.sentParts` without repeating anything, and failures
 * are {@link ChannelSendError}s classified for the worker, keeping the platform's fields and
 * none of the secrets or the payload.
 */
export function describeChannelSenderConformance(
  name: string,
  setup: () => Promise<ChannelSenderConformanceSubject>,
  options: {
    /** The failures the platform can answer with (default all): the web chat's Redis never rate-limits. */
    failures?: readonly ConformanceFailure["kind"][];
  } = {},
): void {
  const failures = FAILURES.filter(([, scripted]) => options.failures?.includes(scripted.kind) ?? true);
  describe(`ChannelSender conformance: ${name}`, () => {
    let s: ChannelSenderConformanceSubject;
    beforeAll(async () => {
      s = await setup();
    });
    afterAll(async () => {
      await s?.close();
    });

    it("sends text before attachments and records every part once, in order, with the platform's id", async () => {
      const target = s.newTarget();
      const r = recorder();
      await s.sender.send(target, message("hello from the conformance suite", [...s.attachments]), r.progress);

      const delivered = await s.delivered(target);
      expect(delivered.map((p) => p.kind)).toEqual(["text", "attachment", "attachment"]);
      expect(delivered[0]!.text).toContain("hello from the conformance suite");
      expect(r.recorded).toEqual(delivered.map((p, index) => [index, p.platformMessageId]));
      expect(r.lastParts, "only the final part is recorded as the last").toEqual([2]);
      expect(new Set(r.recorded.map(([, id]) => id)).size).toBe(3);
      for (const [, id] of r.recorded) expect(id).toMatch(/\S/);
    });

    it("splits long text the same way every time and records each part", async () => {
      const first = s.newTarget();
      const second = s.newTarget();
      const r1 = recorder();
      const r2 = recorder();
      await s.sender.send(first, message(s.multiPartText), r1.progress);
      await s.sender.send(second, message(s.multiPartText), r2.progress);

      const [a, b] = [await s.delivered(first), await s.delivered(second)];
      expect(a.length).toBeGreaterThanOrEqual(2);
      expect(a.every((p) => p.kind === "text")).toBe(true);
      expect(b.map((p) => p.text)).toEqual(a.map((p) => p.text));
      expect(r1.recorded.map(([index]) => index)).toEqual(a.map((_, index) => index));
      expect(r1.recorded.map(([, id]) => id)).toEqual(a.map((p) => p.platformMessageId));
    });

    it("resumes from progress.sentParts without resending earlier parts", async () => {
      const outbound = message(s.multiPartText, [s.attachments[0]]);
      const whole = s.newTarget();
      await s.sender.send(whole, outbound, recorder().progress);
      const all = await s.delivered(whole);

      const resumed = s.newTarget();
      const r = recorder(1);
      await s.sender.send(resumed, outbound, r.progress);
      const rest = await s.delivered(resumed);
      expect(rest.map((p) => [p.kind, p.text])).toEqual(all.slice(1).map((p) => [p.kind, p.text]));
      expect(r.recorded).toEqual(rest.map((p, i) => [i + 1, p.platformMessageId]));

      const finished = s.newTarget();
      const none = recorder(all.length);
      await s.sender.send(finished, outbound, none.progress);
      expect(await s.delivered(finished)).toEqual([]);
      expect(none.recorded).toEqual([]);
    });

    it("stops at a failing part with the earlier ones recorded, and a resume from them repeats nothing", async () => {
      const target = s.newTarget();
      const outbound = message("first part", [...s.attachments]);
      s.failNext(target, "attachment", { kind: "transient" });
      const first = recorder();
      const failure = await sendFailing(s.sender, target, outbound, first.progress);
      expect(failure.kind).toBe("transient");
      const afterFailure = await s.delivered(target);
      expect(afterFailure.map((p) => p.kind)).toEqual(["text"]);
      expect(first.recorded).toEqual([[0, afterFailure[0]!.platformMessageId]]);
      expect(first.lastParts).toEqual([]);

      const retry = recorder(first.recorded.length);
      await s.sender.send(target, outbound, retry.progress);
      const delivered = await s.delivered(target);
      expect(delivered.map((p) => p.kind)).toEqual(["text", "attachment", "attachment"]);
      expect([...first.recorded, ...retry.recorded]).toEqual(delivered.map((p, index) => [index, p.platformMessageId]));
    });

    it.each(failures)("classifies a %s and keeps the platform's fields", async (_label, scripted, kind) => {
      const target = s.newTarget();
      s.failNext(target, "text", scripted);
      const r = recorder();
      const failure = await sendFailing(s.sender, target, message("a message that will fail"), r.progress);

      expect(failure.kind).toBe(kind);
      expect(r.recorded).toEqual([]);
      expect(await s.delivered(target)).toEqual([]);
      const expectedCode = s.errorCodes?.[kind];
      if (scripted.kind !== "network" && expectedCode !== undefined) expect(failure.details.error_code).toBe(expectedCode);
      if (scripted.kind === "rate_limited") expect(failure.details.retry_after).toBe(scripted.retryAfterSeconds);
      else expect(failure.details.retry_after).toBeUndefined();
      if (scripted.kind === "permanent") expect(failure.description).toContain(scripted.description);
      // A dropped connection may have reached the platform; an answer says it did not take it.
      expect(failure.details.outcome_unknown ?? false).toBe(scripted.kind === "network");
    });

    it.each(failures)("keeps secrets and the payload out of the error for a %s", async (_label, scripted) => {
      const target = s.newTarget();
      const canary = `payload-canary-${randomBytes(6).toString("hex")}`;
      s.failNext(target, "text", scripted);
      const failure = await sendFailing(s.sender, target, message(`the private text ${canary}`), recorder().progress);

      const visible = [failure.message, failure.description, String(failure), JSON.stringify(failure.details)].join("\n");
      for (const secret of s.secrets) expect(visible).not.toContain(secret);
      expect(visible).not.toContain(canary);
    });
  });
}
