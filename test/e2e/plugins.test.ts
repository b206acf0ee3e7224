import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { apiClient } from "../gateway/api-client";
import { startFakeOpenMeteo, type FakeOpenMeteo } from "../fakes/open-meteo.fake";
import { waitFor } from "../support/infra";
import { sentTo, startHarness, type Harness } from "../support/nahida-harness";
import { privateText } from "./telegram-fixtures";

const ADMIN = "nhd_plugins_e2e_admin_token_0123456789ab";
const BERLIN = { name: "Berlin", country: "Germany", latitude: 52.52437, longitude: 13.41053, temperature_2m: 3.4, wind_speed_10m: 11.2, weather_code: 3 };
const BERLIN_LINE = "Berlin, Germany: overcast, 3.4 °C, wind 11.2 km/h (at 2026-12-01T09:00 local time)";

/** The tool results the model was shown in requests of this user's session, in order. */
function toolMessages(h: Harness, from: number): string[] {
  return h.openai.requests.slice(from).flatMap((r) => (r.body.messages as { role: string; content?: unknown }[]).filter((m) => m.role === "tool").map((m) => String(m.content)));
}

describe("the example weather plugin, installed through NAHIDA_PLUGINS, through the real services", () => {
  let h: Harness;
  let meteo: FakeOpenMeteo;
  let admin: ReturnType<typeof apiClient>;
  let db: pg.Pool;

  beforeAll(async () => {
    meteo = await startFakeOpenMeteo([BERLIN]);
    h = await startHarness("plugins", {
      NAHIDA_API_TOKEN: ADMIN,
      LANE_LEASE_MS: "1000",
      SCHEDULER_POLL_MS: "100",
      NAHIDA_PLUGINS: "./examples/plugins/weather",
      PLUGIN_WEATHER_FORECAST_URL: meteo.url,
      PLUGIN_WEATHER_GEOCODING_URL: meteo.url,
    });
    admin = apiClient(h.nahida.gatewayAddress!, ADMIN);
    db = new pg.Pool({ connectionString: h.databaseUrl, max: 2 });
  });
  afterAll(async () => {
    await db?.end();
    await h?.close();
    await meteo?.close();
  });

  it("lists every plugin with what it provides and its permissions", async () => {
    const res = await admin("GET", "/api/plugins");
    expect(res.status).toBe(200);
    const plugins = res.body.plugins as { id: string; bundled: boolean; provides: { tools: string[]; commands: string[]; channels: { kind: string }[] }; permissions: { network: string[] } }[];
    expect(plugins.map((p) => [p.id, p.bundled])).toEqual([["core", true], ["telegram", true], ["milky", true], ["web", true], ["weather", false]]);
    const weather = plugins.find((p) => p.id === "weather")!;
    expect(weather.provides).toEqual({ tools: ["weather_now", "weather_share"], commands: ["weather"], channels: [] });
    expect(weather.permissions.network).toContain("config:forecast_url");
    expect(plugins.find((p) => p.id === "telegram")!.provides.channels).toEqual([{ kind: "telegram", transports: ["http-client", "http-server"] }]);
    expect(plugins.find((p) => p.id === "core")!.provides.tools).toContain("sessions_send");
  });

  it("answers the plugin's command before the agent, and /help lists it", async () => {
    const before = h.openai.requests.length;
    h.telegram.pushUpdate(privateText(920000001, "/weather Berlin"));
    const [reply] = await sentTo(h, 920000001, 1);
    expect(reply!.params.text).toBe(BERLIN_LINE);
    h.telegram.pushUpdate(privateText(920000001, "/help"));
    const [, help] = await sentTo(h, 920000001, 2);
    expect(help!.params.text).toContain("/weather [city] — current weather for a city");
    expect(h.openai.requests.length).toBe(before);
  });

  it("offers the plugin's tool to the model and gives it the result", async () => {
    const before = h.openai.requests.length;
    h.openai.enqueue({ toolCalls: [{ name: "weather_now", arguments: { city: "Berlin" } }] });
    h.openai.enqueue({ content: "It is overcast in Berlin." });
    h.telegram.pushUpdate(privateText(920000002, "how is the weather in Berlin?"));
    const [answer] = await sentTo(h, 920000002, 1);
    expect(answer!.params.text).toBe("It is overcast in Berlin.");
    const offered = (h.openai.requests[before]!.body.tools as { function: { name: string } }[]).map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(["weather_now", "weather_share", "current_time"]));
    expect(JSON.parse(toolMessages(h, before)[0]!)).toEqual({ place: "Berlin, Germany", time: "2026-12-01T09:00", temperature_c: 3.4, wind_kmh: 11.2, conditions: "overcast" });
  });

  it("sends the plugin tool's message exactly once when its run is taken over mid-run", async () => {
    const asker = 920000003;
    const group = -1009200003;
    const lane = `chat:telegram:private:${asker}`;
    const before = h.openai.requests.length;
    const share = { toolCalls: [{ name: "weather_share", arguments: { city: "Berlin", target: `telegram:group:${group}` } }] };
    // First run: the tool runs, then the model stalls while the lane is taken over.
    h.openai.enqueue(share);
    h.openai.enqueue({ content: "Shared (first run).", delayMs: 5_000 });
    // The run that takes over does it all again and commits.
    h.openai.enqueue(share);
    h.openai.enqueue({ content: "Shared it." });
    h.telegram.pushUpdate(privateText(asker, "share Berlin's weather with the group"));
    await h.openai.waitForRequests(before + 2, 10_000);
    await db.query("UPDATE lanes SET lease_token = gen_random_uuid(), lease_expires_at = now() - interval '1 second' WHERE key = $1", [lane]);

    const [answer] = await sentTo(h, asker, 1, 20_000);
    expect(answer!.params.text).toBe("Shared it.");
    const [shared] = await sentTo(h, group, 1);
    expect(shared!.params.text).toBe(BERLIN_LINE);
    const runs = await db.query("SELECT id, status FROM lane_runs WHERE lane_key = $1 ORDER BY started_at", [lane]);
    expect(runs.rows.map((r) => r.status)).toEqual(["lost", "succeeded"]);
    const deliveries = await db.query("SELECT run_id FROM deliveries WHERE target = $1", [`telegram:group:${group}`]);
    expect(deliveries.rows).toEqual([{ run_id: runs.rows[1].id }]);
    expect(h.telegram.sent(group)).toHaveLength(1);
  });

  it("refuses a share the send policy denies, and the model reads why", async () => {
    const before = h.openai.requests.length;
    expect((await admin("PUT", "/api/policy/send", { default: "allow", rules: [{ effect: "deny", chat_type: "group" }] })).status).toBe(200);
    try {
      h.openai.enqueue({ toolCalls: [{ name: "weather_share", arguments: { city: "Berlin", target: "telegram:group:-1009200004" } }] });
      h.openai.enqueue({ content: "Could not share." });
      h.telegram.pushUpdate(privateText(920000004, "share Berlin's weather with the other group"));
      await sentTo(h, 920000004, 1);
      expect(toolMessages(h, before)[0]).toMatch(/"error":"weather_share failed: sending to telegram:group:-1009200004 is not allowed: the send policy denies it/);
      expect(h.telegram.sent(-1009200004)).toHaveLength(0);
    } finally {
      await admin("PUT", "/api/policy/send", { default: "allow", rules: [] });
    }
  });

  /** Creates a cron job for `target` with this payload, runs it now, and returns its finished run. */
  async function runJob(target: string, payload: Record<string, unknown>) {
    const created = await admin("POST", "/api/cron", { name: "job", schedule: { kind: "cron", expr: "0 7 * * *" }, target, payload });
    expect(created.status).toBe(201);
    expect((await admin("POST", `/api/cron/${created.body.id}/run`)).status).toBe(202);
    return waitFor(async () => {
      const [run] = (await admin("GET", `/api/cron/${created.body.id}/runs`)).body.runs as { status: string; error: string | null; delivery_ids: string[] }[];
      return run && (run.status === "succeeded" || run.status === "failed") ? run : undefined;
    }, 10_000, "the cron run to end");
  }

  it("a cron job runs the plugin's command in the target chat and delivers its answer, without the model", async () => {
    const before = h.openai.requests.length;
    const run = await runJob("telegram:private:920000005", { kind: "command", command: "/weather Berlin" });
    expect(run).toMatchObject({ status: "succeeded", error: null, delivery_ids: [expect.any(String)] });
    const [sent] = await sentTo(h, 920000005, 1);
    expect(sent!.params.text).toBe(BERLIN_LINE);
    // Without delivery the command runs and nothing is sent.
    expect(await runJob("telegram:private:920000006", { kind: "command", command: "/weather Berlin", deliver: false })).toMatchObject({ status: "succeeded", delivery_ids: [] });
    expect(h.openai.requests.length).toBe(before);
    expect(h.telegram.sent(920000006)).toHaveLength(0);
  });

  it("a cron job's command cannot change the chat, and an unknown one fails the run with the reason", async () => {
    expect(await runJob("telegram:private:920000007", { kind: "command", command: "/send on" })).toMatchObject({ status: "failed", error: "a scheduled job cannot change /send" });
    expect(await runJob("telegram:private:920000007", { kind: "command", command: "/reset" })).toMatchObject({ status: "failed", error: "a scheduled job cannot clear the history" });
    expect(await runJob("telegram:private:920000007", { kind: "command", command: "/nope now" })).toMatchObject({ status: "failed", error: "no command /nope in this deployment" });
    expect(h.telegram.sent(920000007)).toHaveLength(0);
  });

  it("an agent turn whose prompt starts with a command's name is still the model's", async () => {
    const before = h.openai.requests.length;
    h.openai.enqueue({ content: "Here is the plan." });
    const run = await runJob("telegram:private:920000008", { kind: "agent_turn", prompt: "/weather is what I want you to plan around today" });
    expect(run).toMatchObject({ status: "succeeded" });
    expect(h.openai.requests.length).toBe(before + 1);
    const [sent] = await sentTo(h, 920000008, 1);
    expect(sent!.params.text).toBe("Here is the plan.");
  });
});
