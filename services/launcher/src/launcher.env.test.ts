import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { formatEnvIssues, parseEnv } from "@nahida/config";
import { instanceEnvPrefix } from "./channel-instances.env";
import { BUNDLED_PLUGINS, launcherEnvSchema, readLauncherEnv } from "./launcher.env";

// The channel kinds come from the bundled plugins, loaded once.
let launcherSchema: ReturnType<typeof launcherEnvSchema>;
beforeAll(async () => {
  const loaded = await readLauncherEnv({});
  if (!loaded.ok) throw new Error(formatEnvIssues(loaded.error));
  launcherSchema = launcherEnvSchema(loaded.value.plugins.channels());
});

const MAIN = "7000000001:main-token";
const SUPPORT = "7000000002:support-token";

function issues(env: Record<string, string>): string[] {
  const parsed = parseEnv(launcherSchema, env);
  if (parsed.ok) throw new Error(`expected issues, got ${JSON.stringify(parsed.value.channels)}`);
  return formatEnvIssues(parsed.error).split("\n").slice(1);
}

function parsed(env: Record<string, string>) {
  const result = parseEnv(launcherSchema, env);
  if (!result.ok) throw new Error(formatEnvIssues(result.error));
  return result.value;
}

describe("launcher environment: channel instances", () => {
  it("without NAHIDA_CHANNELS runs the default telegram instance only when TELEGRAM_BOT_TOKEN is set", () => {
    expect(parsed({}).channels).toEqual([]);
    expect(parsed({}).NAHIDA_SERVICES).toEqual(["gateway", "scheduler", "agent-worker", "delivery"]);
    const env = parsed({ TELEGRAM_BOT_TOKEN: MAIN, TELEGRAM_MODE: "webhook", TELEGRAM_WEBHOOK_SECRET: "s3cret" });
    expect(env.NAHIDA_SERVICES).toEqual(["gateway", "ingress-telegram", "scheduler", "agent-worker", "delivery"]);
    expect(env.channels).toEqual([
      {
        name: "telegram",
        kind: "telegram",
        config: expect.objectContaining({ BOT_TOKEN: MAIN, MODE: "webhook", WEBHOOK_SECRET: "s3cret", WEBHOOK_PORT: 8081, API_ROOT: "https://api.telegram.org" }),
      },
    ]);
  });

  it("keeps today's messages for the default instance", () => {
    expect(issues({ NAHIDA_SERVICES: "ingress-telegram" })).toEqual(["  TELEGRAM_BOT_TOKEN: is required to run ingress-telegram"]);
    expect(issues({ TELEGRAM_BOT_TOKEN: MAIN, TELEGRAM_MODE: "webhook" })).toEqual(["  TELEGRAM_WEBHOOK_SECRET: is required when TELEGRAM_MODE=webhook"]);
  });

  it("reads each listed instance under its own prefix", () => {
    const env = parsed({
      NAHIDA_CHANNELS: "telegram, support:telegram",
      TELEGRAM_BOT_TOKEN: MAIN,
      SUPPORT_BOT_TOKEN: SUPPORT,
      SUPPORT_API_ROOT: "http://127.0.0.1:9999",
      SUPPORT_MODE: "webhook",
      SUPPORT_WEBHOOK_SECRET: "other-secret",
      SUPPORT_WEBHOOK_PORT: "8082",
    });
    expect(env.channels.map((c) => [c.name, c.kind])).toEqual([
      ["telegram", "telegram"],
      ["support", "telegram"],
    ]);
    expect(env.channels[1]!.config).toMatchObject({ BOT_TOKEN: SUPPORT, API_ROOT: "http://127.0.0.1:9999", MODE: "webhook", WEBHOOK_PORT: 8082 });
    expect(env.channels[0]!.config).toMatchObject({ BOT_TOKEN: MAIN, MODE: "polling" });
    expect(env.NAHIDA_SERVICES).toContain("ingress-telegram");
  });

  it("leaves out instances NAHIDA_CHANNELS does not name, even when their variables are set", () => {
    const env = parsed({ NAHIDA_CHANNELS: "support:telegram", TELEGRAM_BOT_TOKEN: MAIN, SUPPORT_BOT_TOKEN: SUPPORT });
    expect(env.channels.map((c) => c.name)).toEqual(["support"]);
  });

  it.each([
    ["a bad instance name", { NAHIDA_CHANNELS: "Support:telegram" }, 'NAHIDA_CHANNELS: channel name "Support" must match [a-z][a-z0-9_-]*'],
    ["an unknown kind", { NAHIDA_CHANNELS: "qq:milkyway" }, 'NAHIDA_CHANNELS: unknown kind "milkyway" of channel qq; known: telegram'],
    ["a name listed twice", { NAHIDA_CHANNELS: "telegram,telegram", TELEGRAM_BOT_TOKEN: MAIN }, "NAHIDA_CHANNELS: channel telegram is listed twice"],
    ["two names with one prefix", { NAHIDA_CHANNELS: "eu-bot:telegram,eu_bot:telegram", EU_BOT_BOT_TOKEN: SUPPORT }, "NAHIDA_CHANNELS: channels eu-bot and eu_bot would both read EU_BOT_*"],
    ["an entry with two colons", { NAHIDA_CHANNELS: "a:telegram:x" }, 'NAHIDA_CHANNELS: "a:telegram:x" is not name[:kind]'],
    ["a missing token", { NAHIDA_CHANNELS: "telegram,support:telegram", TELEGRAM_BOT_TOKEN: MAIN }, "SUPPORT_BOT_TOKEN: is required for channel support in NAHIDA_CHANNELS"],
    ["a bad prefixed variable", { NAHIDA_CHANNELS: "support:telegram", SUPPORT_BOT_TOKEN: SUPPORT, SUPPORT_MODE: "push" }, "SUPPORT_MODE: Invalid option"],
    [
      "a webhook without its secret",
      { NAHIDA_CHANNELS: "support:telegram", SUPPORT_BOT_TOKEN: SUPPORT, SUPPORT_MODE: "webhook" },
      "SUPPORT_WEBHOOK_SECRET: is required when SUPPORT_MODE=webhook",
    ],
    [
      "two webhooks on one port",
      {
        NAHIDA_CHANNELS: "telegram,support:telegram",
        TELEGRAM_BOT_TOKEN: MAIN,
        TELEGRAM_MODE: "webhook",
        TELEGRAM_WEBHOOK_SECRET: "a",
        SUPPORT_BOT_TOKEN: SUPPORT,
        SUPPORT_MODE: "webhook",
        SUPPORT_WEBHOOK_SECRET: "b",
      },
      "SUPPORT_WEBHOOK_PORT: 8081 is taken by TELEGRAM_WEBHOOK_PORT; each webhook bot needs its own port",
    ],
    ["one bot twice", { NAHIDA_CHANNELS: "telegram,support:telegram", TELEGRAM_BOT_TOKEN: MAIN, SUPPORT_BOT_TOKEN: MAIN }, "SUPPORT_BOT_TOKEN: is the same bot as TELEGRAM_BOT_TOKEN"],
    [
      "an ingress with no instance to run",
      { NAHIDA_CHANNELS: "qq:milkyway", NAHIDA_SERVICES: "gateway,ingress-telegram" },
      "NAHIDA_SERVICES: ingress-telegram has nothing to run: NAHIDA_CHANNELS names no channel of kind telegram",
    ],
  ])("reports %s in one line", (_label, env, line) => {
    expect(issues(env as Record<string, string>).join("\n")).toContain(`  ${line}`);
  });

  it("reports every bad channel variable together with the fixed ones", () => {
    const lines = issues({
      REDIS_URL: "nonsense",
      NAHIDA_CHANNELS: "telegram,support:telegram,Bad,qq:milkyway",
      TELEGRAM_MODE: "webhook",
      TELEGRAM_BOT_TOKEN: MAIN,
      SUPPORT_API_ROOT: "not a url",
    });
    expect(lines.map((l) => l.split(":")[0]!.trim())).toEqual([
      "REDIS_URL",
      "NAHIDA_CHANNELS",
      "NAHIDA_CHANNELS",
      "SUPPORT_BOT_TOKEN",
      "SUPPORT_API_ROOT",
      "TELEGRAM_WEBHOOK_SECRET",
    ]);
  });

  it("derives the variable prefix from the instance name", () => {
    expect(instanceEnvPrefix("telegram")).toBe("TELEGRAM_");
    expect(instanceEnvPrefix("eu-support_2")).toBe("EU_SUPPORT_2_");
  });
});

describe("launcher environment: Milky instances", () => {
  it("runs the milky instance and ingress-milky when MILKY_BASE_URL is set, beside Telegram", () => {
    const env = parsed({ TELEGRAM_BOT_TOKEN: MAIN, MILKY_BASE_URL: "http://127.0.0.1:3000", MILKY_ACCESS_TOKEN: "t", MILKY_EVENT_TRANSPORT: "sse" });
    expect(env.NAHIDA_SERVICES).toEqual(["gateway", "ingress-telegram", "ingress-milky", "scheduler", "agent-worker", "delivery"]);
    expect(env.channels.map((c) => [c.name, c.kind])).toEqual([
      ["telegram", "telegram"],
      ["milky", "milky"],
    ]);
    expect(env.channels[1]!.config).toMatchObject({ BASE_URL: "http://127.0.0.1:3000", ACCESS_TOKEN: "t", EVENT_TRANSPORT: "sse", WEBHOOK_PORT: 8082, LOCAL_FILES: "base64" });
  });

  it("reports every bad Milky variable at once, named as the operator sets it", () => {
    expect(issues({ NAHIDA_SERVICES: "ingress-milky" })).toEqual(["  MILKY_BASE_URL: is required to run ingress-milky"]);
    expect(issues({ MILKY_BASE_URL: "ftp://x", MILKY_EVENT_TRANSPORT: "poll" }).sort()).toEqual([
      "  MILKY_BASE_URL: must be an http:// or https:// URL",
      '  MILKY_EVENT_TRANSPORT: Invalid option: expected one of "websocket"|"sse"|"webhook"',
    ]);
    expect(issues({ NAHIDA_CHANNELS: "milky,qq:milky", MILKY_BASE_URL: "http://h:1", QQ_BASE_URL: "http://H:1/", QQ_EVENT_TRANSPORT: "webhook" })).toEqual([
      "  QQ_BASE_URL: is the same Milky implementation as MILKY_BASE_URL",
      "  QQ_ACCESS_TOKEN: is required when QQ_EVENT_TRANSPORT=webhook (pushes are checked against it)",
    ]);
  });
});

describe("launcher environment: plugins", () => {
  it("reports a plugin refused at start as one line among the bad variables", async () => {
    const result = await readLauncherEnv({ NAHIDA_PLUGINS: "./nowhere, ./examples/plugins/weather", REDIS_URL: "nonsense", PLUGIN_WEATHER_FORECAST_URL: "not a url" });
    if (result.ok) throw new Error("expected issues");
    expect(formatEnvIssues(result.error).split("\n").slice(1)).toEqual([
      "  REDIS_URL: must be a URL like redis://127.0.0.1:6379",
      "  NAHIDA_PLUGINS: plugin ./nowhere: no directory ./nowhere",
    ]);
    // Once the list is right, the plugin's own variables are checked by its schema.
    const config = await readLauncherEnv({ NAHIDA_PLUGINS: "./examples/plugins/weather", PLUGIN_WEATHER_FORECAST_URL: "not a url" });
    if (config.ok) throw new Error("expected issues");
    expect(formatEnvIssues(config.error).split("\n").slice(1)).toEqual(["  PLUGIN_WEATHER_FORECAST_URL: plugin weather: Invalid URL"]);
  });

  it("takes every channel kind, tool and command from the plugins", async () => {
    const result = await readLauncherEnv({ NAHIDA_PLUGINS: "./examples/plugins/weather" });
    if (!result.ok) throw new Error(formatEnvIssues(result.error));
    const { plugins } = result.value;
    expect(plugins.channels().map((c) => c.kind)).toEqual(["telegram", "milky", "web"]);
    expect(plugins.tools().map((t) => t.name)).toEqual(expect.arrayContaining(["current_time", "sessions_send", "weather_now"]));
    expect(plugins.commands().map((c) => c.name)).toEqual(expect.arrayContaining(["help", "cron", "weather"]));
  });
});

describe("launcher environment: web chats", () => {
  const SECRET = "0123456789abcdef0123456789abcdef";

  it("serves the web chat from the gateway when WEB_SECRET is set: a channel without an ingress service", () => {
    const env = parsed({ WEB_SECRET: SECRET });
    expect(env.NAHIDA_SERVICES).toEqual(["gateway", "scheduler", "agent-worker", "delivery"]);
    expect(env.channels.map((c) => [c.name, c.kind])).toEqual([["web", "web"]]);
    expect(env.channels[0]!.config).toEqual({ SECRET, ANONYMOUS: false, PATH: "/chat", ORIGINS: [], RATE_PER_MINUTE: 20, TITLE: "Chat", HISTORY_LIMIT: 50 });
    expect(issues({ WEB_SECRET: SECRET, NAHIDA_SERVICES: "ingress-web" })[0]).toContain("unknown service ingress-web");
  });

  it("reports a short secret, a bad path or origin, and two chats on one path", () => {
    expect(issues({ WEB_SECRET: "short", WEB_PATH: "/api/chat", WEB_ORIGINS: "https://shop.example.com, shop.example.com", WEB_ANONYMOUS: "yes" }).sort()).toEqual([
      "  WEB_ANONYMOUS: must be true or false",
      "  WEB_ORIGINS: must be origins like https://shop.example.com, comma-separated",
      "  WEB_PATH: is a path the gateway already serves",
      "  WEB_SECRET: must be at least 32 characters",
    ]);
    expect(issues({ NAHIDA_CHANNELS: "web,shop:web", WEB_SECRET: SECRET, SHOP_SECRET: SECRET, SHOP_PATH: "/chat/shop" })).toEqual([
      "  SHOP_PATH: /chat/shop overlaps WEB_PATH (/chat); each web chat needs a path of its own",
    ]);
  });
});

describe("launcher environment: the gateway behind a proxy", () => {
  it("believes X-Forwarded-* from every proxy, from listed ones, or (unset) from none", () => {
    expect(parsed({}).GATEWAY_TRUST_PROXY).toBeUndefined();
    expect(parsed({ GATEWAY_TRUST_PROXY: "true" }).GATEWAY_TRUST_PROXY).toBe(true);
    expect(parsed({ GATEWAY_TRUST_PROXY: "10.0.0.0/8, 127.0.0.1" }).GATEWAY_TRUST_PROXY).toBe("10.0.0.0/8, 127.0.0.1");
    expect(issues({ GATEWAY_TRUST_PROXY: "yes please" })).toEqual(["  GATEWAY_TRUST_PROXY: must be true, or proxy addresses/CIDRs, comma-separated"]);
  });
});

describe("the bundled plugins", () => {
  it("import, each, the module its plugin.yaml names as its entry", async () => {
    const loaded = await readLauncherEnv({});
    if (!loaded.ok) throw new Error(formatEnvIssues(loaded.error));
    const { plugins } = loaded.value.plugins;
    expect(plugins.filter((p) => p.bundled)).toHaveLength(BUNDLED_PLUGINS.length);
    for (const [i, entry] of BUNDLED_PLUGINS.entries()) {
      const plugin = plugins[i]!;
      const byPath = (await import(pathToFileURL(join(plugin.dir, plugin.manifest.entry)).href)) as { default: unknown };
      expect(((await entry.load!()) as { default: unknown }).default, entry.spec).toBe(byPath.default);
    }
  });
});

describe("launcher environment: retention", () => {
  it("refuses to delete inbound messages sooner than the dedupe window ends", () => {
    expect(issues({ NAHIDA_RETENTION_INBOUND_DAYS: "2", NAHIDA_DEDUPE_WINDOW_MS: String(3 * 86_400_000) })).toEqual([
      `  NAHIDA_RETENTION_INBOUND_DAYS: must keep inbound messages at least as long as NAHIDA_DEDUPE_WINDOW_MS (${3 * 86_400_000} ms), or 0`,
    ]);
    for (const days of ["3", "0"]) expect(parseEnv(launcherSchema, { NAHIDA_RETENTION_INBOUND_DAYS: days, NAHIDA_DEDUPE_WINDOW_MS: String(3 * 86_400_000) }).ok, days).toBe(true);
  });
});

describe("launcher environment: a transaction pooler", () => {
  it("needs a direct URL for the migrations and accepts only the two pooler kinds", () => {
    expect(issues({ DATABASE_POOLER: "transaction" })).toEqual([
      "  DATABASE_DIRECT_URL: must be set with DATABASE_POOLER=transaction: migrations hold a lock across statements, which a transaction pooler cannot keep on one connection",
    ]);
    const parsed = parseEnv(launcherSchema, { DATABASE_POOLER: "transaction", DATABASE_URL: "postgresql://nahida@pgbouncer:6432/nahida", DATABASE_DIRECT_URL: "postgresql://nahida@postgres:5432/nahida" });
    expect(parsed.ok && parsed.value.DATABASE_POOLER).toBe("transaction");
    const plain = parseEnv(launcherSchema, {});
    expect(plain.ok && plain.value.DATABASE_POOLER).toBe("none");
    expect(issues({ DATABASE_POOLER: "session" })[0]).toMatch(/^ {2}DATABASE_POOLER: /);
    expect(issues({ DATABASE_DIRECT_URL: "mysql://x@y/z" })).toEqual(["  DATABASE_DIRECT_URL: must be a URL like postgresql://user@host:5432/nahida"]);
  });
});

describe("launcher environment: Redis Sentinel", () => {
  it("reads the sentinels and the group in place of REDIS_URL, with the credentials of both", () => {
    const parsed = parseEnv(launcherSchema, {
      REDIS_SENTINELS: "sentinel-1:26379, 10.0.0.2:26380,[::1]:26381",
      REDIS_SENTINEL_NAME: "nahida",
      REDIS_PASSWORD: "data-secret",
      REDIS_SENTINEL_PASSWORD: "sentinel-secret",
    });
    expect(parsed.ok && parsed.value.redis).toEqual({
      kind: "sentinel",
      sentinels: [
        { host: "sentinel-1", port: 26379 },
        { host: "10.0.0.2", port: 26380 },
        { host: "::1", port: 26381 },
      ],
      name: "nahida",
      password: "data-secret",
      sentinelPassword: "sentinel-secret",
    });
    const plain = parseEnv(launcherSchema, { REDIS_URL: "redis://redis:6379" });
    expect(plain.ok && plain.value.redis).toEqual({ kind: "url", url: "redis://redis:6379" });
    const cluster = parseEnv(launcherSchema, { REDIS_CLUSTER_NODES: "redis-0:6379,redis-1:6379", REDIS_PASSWORD: "p" });
    expect(cluster.ok && cluster.value.redis).toEqual({ kind: "cluster", nodes: [{ host: "redis-0", port: 6379 }, { host: "redis-1", port: 6379 }], password: "p" });
  });

  it("refuses both ways at once, bad sentinel lists, and credentials the URL should carry", () => {
    expect(issues({ REDIS_SENTINELS: "a:26379", REDIS_URL: "redis://redis:6379" })).toEqual([
      "  REDIS_SENTINELS: set one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES, not REDIS_URL and REDIS_SENTINELS",
    ]);
    expect(issues({ REDIS_SENTINELS: "a:26379", REDIS_CLUSTER_NODES: "b:6379" })).toEqual([
      "  REDIS_CLUSTER_NODES: set one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES, not REDIS_SENTINELS and REDIS_CLUSTER_NODES",
    ]);
    expect(issues({ REDIS_CLUSTER_NODES: "b:6379", REDIS_SENTINEL_NAME: "x" })).toEqual(["  REDIS_SENTINEL_NAME: is read only with REDIS_SENTINELS"]);
    for (const bad of ["a", "a:0", "a:70000", "a:26379,b", ":26379", " , "]) {
      expect(issues({ REDIS_SENTINELS: bad })[0], bad).toMatch(/^ {2}REDIS_SENTINELS: must (be host:port pairs|name at least one)/);
    }
    expect(issues({ REDIS_PASSWORD: "x" })).toEqual([
      "  REDIS_PASSWORD: is read only with REDIS_SENTINELS or REDIS_CLUSTER_NODES (with REDIS_URL, credentials go in the URL: redis://user:password@host:6379)",
    ]);
  });
});

describe("launcher environment: rules across variables", () => {
  it("reports every broken rule at once", () => {
    expect(issues({ NAHIDA_RETENTION_INBOUND_DAYS: "2", NAHIDA_DEDUPE_WINDOW_MS: String(3 * 86_400_000), REDIS_PASSWORD: "x", DATABASE_POOLER: "transaction" }).map((line) => line.split(":")[0])).toEqual([
      "  REDIS_PASSWORD",
      "  NAHIDA_RETENTION_INBOUND_DAYS",
      "  DATABASE_DIRECT_URL",
    ]);
  });
});
