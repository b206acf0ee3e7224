import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { startFakeMilky, type FakeMilky } from "../fakes/milky.fake";
import { waitFor } from "../support/infra";
import { startHarness, type Harness } from "../support/nahida-harness";
import { freePort } from "../support/ports";
import { REPO_ROOT } from "../support/processes";
import { hostileBodies, type HostileBody } from "./hostile";

// The fuzz run (issue 25): one all-in-one process with Telegram and Milky in webhook mode and
// the gateway, fed seeded hostile bodies on every ingress and route, with well-formed
// messages in between that must all be answered. `npm test` runs it small
// (test/fuzz/fuzz.test.ts), `npm run fuzz` large (fuzz.main.ts).

const SECRET = "fuzz-Secret_123";
const MILKY_TOKEN = "fuzz-milky-token";
const ADMIN = "nhd_fuzz_admin_token_0123456789abcdef";
/** A well-formed message every this many inputs, each answered by the end. */
const PROBE_EVERY = 50;
/** Each probe has a chat of its own (one chat's messages that come during a run are answered together). */
const PROBE_CHATS = 600_000_000;
/** Inputs drawn at once. */
const CHUNK = 100;
/** Inputs per target sent before RSS is first read. */
const WARM_UP = 100;

interface Target {
  name: string;
  method: "POST" | "PUT" | "GET";
  path: string;
  headers: Record<string, string>;
  bodies: fc.Arbitrary<HostileBody> | null;
  /** For GET routes: hostile query strings. */
  queries?: fc.Arbitrary<string>;
}

export interface TargetReport {
  name: string;
  runs: number;
  statuses: Record<string, number>;
  /** Inputs answered 5xx (or not at all): each is a finding. */
  failures: { label: string; status: number | string; body: string }[];
  slowest: { label: string; ms: number }[];
}

export interface FuzzReport {
  targets: TargetReport[];
  probes: { sent: number; answered: number };
  ready: boolean;
  rss: { startMb: number; endMb: number };
  /** V8 heap in use after a collection, before and after: a leak grows it, allocator slack does not. */
  heap: { startMb: number; endMb: number };
}

const fixtures = (dir: string) =>
  readdirSync(join(REPO_ROOT, "test/fixtures", dir))
    .filter((f) => f.endsWith(".json"))
    .map((f) => JSON.parse(readFileSync(join(REPO_ROOT, "test/fixtures", dir, f), "utf8")));

/** Hostile query strings for a list route. */
const hostileQueries = fc.oneof(
  fc.dictionary(fc.constantFrom("limit", "offset", "status", "target", "channel", "since", "until", "active_since", "source", "x"), fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom("-1", "1e9", "NaN", "%00", "%zz", "\u0000", "\ud800"))).map(
    (params) => Object.entries(params).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v.replace(/[\ud800-\udfff]/g, "?"))}`).join("&"),
  ),
  fc.constantFrom("%", "a=%zz", "limit=1&limit=2", "&&&", "=x", `x=${"a".repeat(5_000)}`),
);

function targets(h: Harness, telegramUrl: string, milkyUrl: string): Target[] {
  const api = h.nahida.gatewayAddress!;
  const auth = { authorization: `Bearer ${ADMIN}` };
  const session = "00000000-0000-4000-8000-000000000001";
  const post = (name: string, path: string, bases: unknown[], method: "POST" | "PUT" = "POST"): Target => ({
    name,
    method,
    path: `${api}${path}`,
    headers: auth,
    bodies: hostileBodies(bases as never, (inner) => `{"target":${inner}}`),
  });
  return [
    { name: "telegram webhook", method: "POST", path: telegramUrl, headers: { "x-telegram-bot-api-secret-token": SECRET }, bodies: hostileBodies(fixtures("telegram"), (inner) => `{"update_id":1,"edited_message":{"date":${inner}}}`) },
    { name: "milky webhook", method: "POST", path: milkyUrl, headers: { authorization: `Bearer ${MILKY_TOKEN}` }, bodies: hostileBodies(fixtures("milky"), (inner) => `{"event_type":"message_receive","data":${inner}}`) },
    post("POST /api/send", "/api/send", [{ target: "telegram:private:600000099", text: "hi", attachments: [] }, { target: "telegram:group:-100600000099", text: "**bold**", reply_to: "3" }]),
    post("POST /api/cron", "/api/cron", [{ name: "n", schedule: { kind: "every", every_ms: 3_600_000 }, target: "telegram:private:600000098", payload: { kind: "notify", text: "t" } }]),
    post("POST /api/sessions/:id/events", `/api/sessions/${session}/events`, [{ message: "hello", mode: "record_only" }]),
    post("PUT /api/policy/send", "/api/policy/send", [{ default: "allow", rules: [{ effect: "deny", channel: "milky" }] }], "PUT"),
    post("POST /api/tokens", "/api/tokens", [{ name: "fuzz", scopes: ["read"] }]),
    { name: "GET /api/deliveries", method: "GET", path: `${api}/api/deliveries`, headers: auth, bodies: null, queries: hostileQueries },
    { name: "GET /api/sessions", method: "GET", path: `${api}/api/sessions`, headers: auth, bodies: null, queries: hostileQueries },
    { name: "GET /api/inbound/quarantine", method: "GET", path: `${api}/api/inbound/quarantine`, headers: auth, bodies: null, queries: hostileQueries },
  ];
}

/** Sends one input; 5xx and no answer at all are failures. */
async function send(target: Target, input: HostileBody | string): Promise<{ status: number | string; body: string; ms: number }> {
  const started = performance.now();
  try {
    const res =
      typeof input === "string"
        ? await fetch(`${target.path}?${input}`, { method: target.method, headers: target.headers })
        : await fetch(target.path, { method: target.method, headers: { ...target.headers, "content-type": input.contentType }, body: input.body });
    return { status: res.status, body: (await res.text()).slice(0, 300), ms: performance.now() - started };
  } catch (error) {
    return { status: `no answer: ${(error as Error).message}`, body: "", ms: performance.now() - started };
  }
}

/**
 * Runs `runs` seeded inputs against every target and reports per target: status counts,
 * the failures, the slowest inputs; whether every probe was answered, the process still
 * ready, and its RSS before and after.
 */
export async function fuzz(o: { runs: number; seed: number; concurrency?: number; log?: (line: string) => void }): Promise<FuzzReport> {
  const milky = await startFakeMilky({ accessToken: MILKY_TOKEN });
  const telegramPort = await freePort();
  const milkyPort = await freePort();
  const telegramUrl = `http://127.0.0.1:${telegramPort}/telegram/webhook`;
  const milkyUrl = `http://127.0.0.1:${milkyPort}/milky/webhook`;
  const h = await startHarness("fuzz", {
    TELEGRAM_MODE: "webhook",
    TELEGRAM_WEBHOOK_SECRET: SECRET,
    TELEGRAM_WEBHOOK_PORT: String(telegramPort),
    TELEGRAM_WEBHOOK_URL: telegramUrl,
    MILKY_BASE_URL: milky.baseUrl,
    MILKY_ACCESS_TOKEN: MILKY_TOKEN,
    MILKY_EVENT_TRANSPORT: "webhook",
    MILKY_WEBHOOK_PORT: String(milkyPort),
    NAHIDA_API_TOKEN: ADMIN,
    NAHIDA_API_RATE_LIMIT_PER_MINUTE: "1000000",
  });
  try {
    return await run(h, milky, telegramUrl, milkyUrl, o);
  } finally {
    await h.close();
    await milky.close();
  }
}

async function run(h: Harness, _milky: FakeMilky, telegramUrl: string, milkyUrl: string, o: { runs: number; seed: number; concurrency?: number; log?: (line: string) => void }): Promise<FuzzReport> {
  const concurrency = o.concurrency ?? 8;
  let probes = 0;
  const probe = async () => {
    probes += 1;
    const chat = PROBE_CHATS + probes;
    const update = { update_id: 900_000_000 + probes, message: { message_id: probes, date: Math.floor(Date.now() / 1000), chat: { id: chat, type: "private", first_name: "P" }, from: { id: chat, is_bot: false, first_name: "P" }, text: `probe ${probes}` } };
    const res = await fetch(telegramUrl, { method: "POST", headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": SECRET }, body: JSON.stringify(update) });
    if (res.status !== 200) throw new Error(`a well-formed update was answered ${res.status}`);
  };
  await probe();
  const answered = () => Array.from({ length: probes }, (_, i) => PROBE_CHATS + i + 1).filter((chat) => h.telegram.sent(chat).length > 0).length;
  await waitFor(async () => answered() >= 1 || undefined, 30_000, "the first probe's answer");
  const all = targets(h, telegramUrl, milkyUrl);
  const sample = (target: Target, runs: number, seed: number): (HostileBody | string)[] =>
    target.bodies ? fc.sample(target.bodies, { numRuns: runs, seed }) : fc.sample(target.queries!, { numRuns: runs, seed });
  // Warm up first (code compiled, pools and caches filled), so that RSS compares like with like.
  for (const target of all) for (const input of sample(target, WARM_UP, o.seed + 1)) await send(target, input);
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const rssStart = process.memoryUsage().rss;
  const heapStart = process.memoryUsage().heapUsed;
  const reports: TargetReport[] = [];
  for (const target of all) {
    const report: TargetReport = { name: target.name, runs: 0, statuses: {}, failures: [], slowest: [] };
    // Drawn a chunk at a time (each chunk its own seed, so a run is repeatable): the driver
    // shares the process with the services, and holding every input would inflate the RSS measured.
    let chunk: (HostileBody | string)[] = [];
    let drawn = 0;
    const take = (): HostileBody | string | undefined => {
      if (chunk.length === 0 && drawn < o.runs) {
        const size = Math.min(CHUNK, o.runs - drawn);
        chunk = sample(target, size, o.seed * 1_000 + drawn / CHUNK);
        drawn += size;
      }
      return chunk.shift();
    };
    const worker = async () => {
      for (let input = take(); input !== undefined; input = take()) {
        const index = report.runs++;
        if (index % PROBE_EVERY === 0) await probe();
        const answer = await send(target, input);
        const key = String(answer.status);
        report.statuses[key] = (report.statuses[key] ?? 0) + 1;
        const label = typeof input === "string" ? `query ${input.slice(0, 80)}` : input.label;
        if (typeof answer.status !== "number" || answer.status >= 500) report.failures.push({ label, status: answer.status, body: answer.body });
        report.slowest.push({ label, ms: Math.round(answer.ms) });
        report.slowest.sort((a, b) => b.ms - a.ms).splice(5);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    reports.push(report);
    o.log?.(`${target.name}: ${JSON.stringify(report.statuses)}${report.failures.length ? ` FAILURES ${report.failures.length}` : ""}`);
  }
  await waitFor(async () => answered() >= probes || undefined, 60_000, `all ${probes} probes answered`).catch(() => undefined);
  const ready = (await fetch(`${h.nahida.gatewayAddress}/api/ready`)).status === 200;
  gc?.();
  return {
    targets: reports,
    probes: { sent: probes, answered: answered() },
    ready,
    rss: { startMb: Math.round(rssStart / 1e6), endMb: Math.round(process.memoryUsage().rss / 1e6) },
    heap: { startMb: Math.round(heapStart / 1e6), endMb: Math.round(process.memoryUsage().heapUsed / 1e6) },
  };
}
