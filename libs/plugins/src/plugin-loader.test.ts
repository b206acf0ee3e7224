import { createServer, type Server } from "node:http";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import type { ToolContext, ToolOutbox } from "@nahida/plugin-sdk";
import { loadPlugins, type LoadPluginsOptions, type PluginEntry } from "./plugin-loader";

const ZOD = pathToFileURL(createRequire(import.meta.url).resolve("zod")).href;
const CORE: PluginEntry = { spec: "@nahida/plugin-core", bundled: true, envPrefix: "AGENT_", from: import.meta.dirname };

let root: string;
let server: Server;
let serverUrl: string;
const hits: string[] = [];
const authorizations = new Map<string, string | undefined>();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "nahida-plugins-"));
  server = createServer((request, response) => {
    hits.push(request.url ?? "");
    authorizations.set(`${request.headers.host}${request.url}`, request.headers.authorization);
    const port = (server.address() as { port: number }).port;
    if (request.url === "/redirect") response.writeHead(302, { location: "http://localhost:1/elsewhere" }).end();
    else if (request.url === "/hop") response.writeHead(302, { location: `http://localhost:${port}/landing` }).end();
    else if (request.url === "/same-origin-hop") response.writeHead(307, { location: "/landing-here" }).end();
    else response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  serverUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  server?.close();
  await rm(root, { recursive: true, force: true });
});

/** A plugin directory with this manifest and entry source (`marker` files show whether its code ran). */
async function plugin(name: string, manifest: Record<string, unknown>, source: string): Promise<PluginEntry> {
  const dir = join(root, name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "plugin.yaml"), stringify({ name, version: "1.0.0", entry: "index.mjs", nahida: ">=0.1", sdk: "^1.0", ...manifest }));
  await writeFile(join(dir, "index.mjs"), `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(join(dir, "ran"))}, "yes");\n${source}`);
  return { spec: dir, bundled: false };
}

const ran = (entry: PluginEntry) => readFile(join(entry.spec, "ran"), "utf8").then(() => true, () => false);

const load = (entries: PluginEntry[], extra: Partial<LoadPluginsOptions> = {}) =>
  loadPlugins({ entries, baseDir: root, env: {}, hostVersion: "0.1.0", timeZone: "UTC", ...extra });

const lines = (result: Awaited<ReturnType<typeof load>>) => {
  if (result.ok) throw new Error("expected the plugins to be refused");
  return result.error.map((i) => `${i.variable ? `${i.variable}: ` : ""}plugin ${i.plugin}: ${i.message}`);
};

const toolPlugin = (id: string, tool: string, execute = "async () => ({ ok: true })") =>
  `export default { kind: "nahida-plugin", id: ${JSON.stringify(id)}, register(api) { api.tool({ name: ${JSON.stringify(tool)}, description: "t", parameters: null, execute: ${execute} }); } };`;

const written: string[] = [];

function toolContext(): ToolContext {
  const done = (what: string) => async () => {
    written.push(what);
    return { ok: true, value: {} };
  };
  const outbox = {
    send: async () => ({ ok: true, value: { deliveryId: "d" } }),
    createCron: done("createCron"),
    sendEvent: done("sendEvent"),
    spawnTask: done("spawnTask"),
  } as unknown as ToolOutbox;
  return { sessionId: "s", chatAddress: "telegram:private:1", runId: "r", laneKey: "l", eventDepth: 0, subagent: false, allowedTools: null, endTurn() {}, signal: new AbortController().signal, outbox };
}

describe("plugin loading: refused at start with one line each, before any plugin code runs", () => {
  it("refuses a plugin for a host version it does not support", async () => {
    const future = await plugin("future", { id: "future", nahida: ">=99" }, toolPlugin("future", "future_tool"));
    expect(lines(await load([future]))).toEqual(["plugin future: requires nahida >=99; this host is 0.1.0"]);
    expect(await ran(future)).toBe(false);
  });

  it("refuses a plugin written for another major version of the plugin API", async () => {
    const old = await plugin("old", { id: "old", sdk: "^0.1" }, toolPlugin("old", "old_tool"));
    expect(lines(await load([old]))).toEqual(["plugin old: is written for plugin API ^0.1; this host's plugin API (@nahida/plugin-sdk) is 1.0.0"]);
    expect(await ran(old)).toBe(false);
  });

  it("refuses a tool name the core plugin provides, and runs neither", async () => {
    const clash = await plugin("clash", { id: "clash", provides: { tools: ["current_time"] } }, toolPlugin("clash", "current_time"));
    expect(lines(await load([CORE, clash]))).toEqual(["plugin clash: provides tool current_time, which plugin core provides already"]);
    expect(await ran(clash)).toBe(false);
  });

  it("reports every refused plugin at once: unknown fields, bad ranges, bad names, twice the same id", async () => {
    const typo = await plugin("typo", { id: "typo", permission: { network: ["x.org"] } }, "");
    const badRange = await plugin("bad-range", { id: "bad-range", nahida: "soon" }, "");
    const badName = await plugin("bad-name", { id: "bad-name", provides: { commands: ["/Go"] } }, "");
    const first = await plugin("twice-a", { id: "twice" }, "");
    const second = await plugin("twice-b", { id: "twice" }, "");
    expect(lines(await load([typo, badRange, badName, first, second, { spec: "./nowhere", bundled: false }]))).toEqual([
      'plugin typo/: plugin.yaml: Unrecognized key: "permission"'.replace("typo/", typo.spec),
      `plugin ${badRange.spec}: plugin.yaml: nahida: "soon" is not a semver range`,
      `plugin ${badName.spec}: plugin.yaml: provides.commands.0: must be a-z, 0-9 and _, starting with a letter (without the /)`,
      `plugin twice: is listed twice (${first.spec} and ${second.spec})`,
      "plugin ./nowhere: no directory ./nowhere",
    ]);
  });

  it("refuses a tool it did not declare, a capability it was not granted, and a default export that is not a plugin", async () => {
    const undeclared = await plugin("undeclared", { id: "undeclared" }, toolPlugin("undeclared", "sneaky"));
    const noGrant = await plugin("no-grant", { id: "no-grant" }, `export default { kind: "nahida-plugin", id: "no-grant", register(api) { api.workspace; } };`);
    const notPlugin = await plugin("not-plugin", { id: "not-plugin" }, "export default { register() {} };");
    expect(lines(await load([undeclared, noGrant, notPlugin], { workspaceDir: root + "/ws" }))).toEqual([
      "plugin undeclared: registers tool sneaky, which its plugin.yaml does not provide",
      "plugin no-grant: uses api.workspace without permissions.workspace in its plugin.yaml",
      "plugin not-plugin: its entry index.mjs has no default export made by definePlugin(...)",
    ]);
  });

  it("never loads a plugin from inside the agent's workspace", async () => {
    const inside = await plugin("ws/inner", { id: "inner" }, "");
    expect(lines(await load([inside], { workspaceDir: join(root, "ws") }))).toEqual([
      `plugin ${inside.spec}: is inside NAHIDA_WORKSPACE_DIR; plugins are never loaded from the agent's workspace`,
    ]);
  });

  it("reads the config from PLUGIN_<ID>_* through the plugin's schema, naming a bad variable, and refuses a stale plugin.yaml config", async () => {
    const source = `import { z } from ${JSON.stringify(ZOD)};
export default { kind: "nahida-plugin", id: "conf", config: z.object({ limit: z.coerce.number().int().max(10).default(3) }), register(api) { globalThis.confLimit = api.config.limit; } };`;
    const schema = { type: "object", properties: { limit: { default: 3, type: "integer", maximum: 10, minimum: -9007199254740991 } } };
    const good = await plugin("conf", { id: "conf", config: schema }, source);
    const loaded = await load([good], { env: { PLUGIN_CONF_LIMIT: "7" } });
    expect(loaded.ok ? null : lines(loaded)).toBeNull();
    expect((globalThis as { confLimit?: number }).confLimit).toBe(7);
    expect(lines(await load([good], { env: { PLUGIN_CONF_LIMIT: "70" } }))).toEqual(["PLUGIN_CONF_LIMIT: plugin conf: Too big: expected number to be <=10"]);
    const stale = await plugin("stale", { id: "stale", config: { type: "object", properties: {} } }, source.replace('"conf"', '"stale"'));
    expect(lines(await load([stale]))).toEqual([
      "plugin stale: plugin.yaml's config is not the JSON Schema of the code's config schema; print the right one with: nahida plugins schema <dir>",
    ]);
  });
});

describe("plugin permissions at run time", () => {
  it("a tool's fetch reaches only the hosts its plugin declared, redirects included, with a one-line reason", async () => {
    const fetcher = `async ({ url }) => { const r = await api.fetch(url); return r.status; }`;
    const source = `export default { kind: "nahida-plugin", id: "fetcher", register(api) { api.tool({ name: "fetch_it", description: "t", parameters: null, execute: ${fetcher} }); } };`;
    const entry = await plugin("fetcher", { id: "fetcher", provides: { tools: ["fetch_it"] }, permissions: { network: ["127.0.0.1"] } }, source);
    const loaded = await load([entry]);
    if (!loaded.ok) throw new Error(lines(loaded).join("\n"));
    const [tool] = loaded.value.tools();
    expect(await tool!.execute({ url: `${serverUrl}/fine` }, toolContext())).toBe(200);
    const port = serverUrl.split(":")[2];
    await expect(tool!.execute({ url: `http://localhost:${port}/sneaky` }, toolContext())).rejects.toThrow(
      `plugin fetcher may not reach localhost:${port}: not in its permissions.network (127.0.0.1)`,
    );
    await expect(tool!.execute({ url: `${serverUrl}/redirect` }, toolContext())).rejects.toThrow("plugin fetcher may not reach localhost:1");
    expect(hits).toEqual(["/fine", "/redirect"]);
  });

  it("a host can come from a config key (a self-hosted endpoint)", async () => {
    const source = `import { z } from ${JSON.stringify(ZOD)};
export default { kind: "nahida-plugin", id: "self-hosted", config: z.object({ api_url: z.string() }), register(api) { api.tool({ name: "ping_api", description: "t", parameters: null, execute: async () => (await api.fetch(api.config.api_url + "/ping")).status }); } };`;
    const schema = { type: "object", properties: { api_url: { type: "string" } }, required: ["api_url"] };
    const entry = await plugin("self-hosted", { id: "self-hosted", config: schema, provides: { tools: ["ping_api"] }, permissions: { network: ["config:api_url"] } }, source);
    const loaded = await load([entry], { env: { PLUGIN_SELF_HOSTED_API_URL: serverUrl } });
    if (!loaded.ok) throw new Error(lines(loaded).join("\n"));
    expect(await loaded.value.tools()[0]!.execute({}, toolContext())).toBe(200);
  });

  it("a tool sends beyond its own chat only to targets its plugin declared", async () => {
    const send = `async ({ target }, context) => { const r = await context.outbox.send({ target, message: { text: "hi", attachments: [], extra: {} } }); return r.ok ? "sent" : r.error.message; }`;
    const source = `export default { kind: "nahida-plugin", id: "sender", register(api) { api.tool({ name: "send_it", description: "t", parameters: null, execute: ${send} }); } };`;
    const entry = await plugin("sender", { id: "sender", provides: { tools: ["send_it"] } }, source);
    const loaded = await load([entry]);
    if (!loaded.ok) throw new Error(lines(loaded).join("\n"));
    const [tool] = loaded.value.tools();
    expect(await tool!.execute({ target: "telegram:private:1" }, toolContext())).toBe("sent");
    expect(await tool!.execute({ target: "telegram:group:-100" }, toolContext())).toBe("plugin sender may not send to telegram:group:-100: not in its permissions.send (none)");
  });

  it("credentials do not follow a redirect to another origin; they do to the same one", async () => {
    const fetcher = `async ({ url }) => (await api.fetch(url, { headers: { authorization: "Bearer SECRET" } })).status`;
    const source = `export default { kind: "nahida-plugin", id: "hopper", register(api) { api.tool({ name: "hop", description: "t", parameters: null, execute: ${fetcher} }); } };`;
    const entry = await plugin("hopper", { id: "hopper", provides: { tools: ["hop"] }, permissions: { network: ["127.0.0.1", "localhost"] } }, source);
    const loaded = await load([entry]);
    if (!loaded.ok) throw new Error(lines(loaded).join("\n"));
    const [tool] = loaded.value.tools();
    const port = serverUrl.split(":")[2];
    expect(await tool!.execute({ url: `${serverUrl}/hop` }, toolContext())).toBe(200);
    expect(authorizations.get(`127.0.0.1:${port}/hop`)).toBe("Bearer SECRET");
    expect(authorizations.get(`localhost:${port}/landing`)).toBeUndefined();
    expect(await tool!.execute({ url: `${serverUrl}/same-origin-hop` }, toolContext())).toBe(200);
    expect(authorizations.get(`127.0.0.1:${port}/landing-here`)).toBe("Bearer SECRET");
  });

  it("without cron or sessions permissions a tool's cron jobs, events and sub-agents are refused, in execute and in permitted", async () => {
    const calls = `async (args, context) => [
      (await context.outbox.createCron({ name: "x", target: "telegram:private:1" })).error?.message,
      (await context.outbox.sendEvent({ sessionId: "00000000-0000-4000-8000-000000000000", content: "hi", mode: "enqueue" })).error?.message,
      (await context.outbox.spawnTask({ task: "t" })).error?.message,
    ]`;
    const permitted = `(context) => { globalThis.permittedSaw = context.outbox.createCron({ name: "x", target: "telegram:private:1" }); return true; }`;
    const source = `export default { kind: "nahida-plugin", id: "meek", register(api) { api.tool({ name: "try_all", description: "t", parameters: null, permitted: ${permitted}, execute: ${calls} }); } };`;
    const entry = await plugin("meek", { id: "meek", provides: { tools: ["try_all"] } }, source);
    const loaded = await load([entry]);
    if (!loaded.ok) throw new Error(lines(loaded).join("\n"));
    const [tool] = loaded.value.tools();
    expect(await tool!.execute({}, toolContext())).toEqual([
      "plugin meek may not create, change or delete cron jobs: its plugin.yaml does not grant permissions.cron",
      "plugin meek may not send into other sessions: its plugin.yaml does not grant permissions.sessions",
      "plugin meek may not start sub-agents: its plugin.yaml does not grant permissions.sessions",
    ]);
    expect(tool!.permitted!(toolContext())).toBe(true);
    expect(await (globalThis as { permittedSaw?: Promise<{ ok: boolean }> }).permittedSaw).toMatchObject({ ok: false });
    expect(written).toEqual([]);
  });

  it("api.ledger reads only: the repositories' writing methods are not there, and a spread of it works", async () => {
    const source = `export default { kind: "nahida-plugin", id: "reader", register(api) {
      const { cron, sessions } = { ...api.ledger };
      api.tool({ name: "peek", description: "t", parameters: null, execute: async () => ({ cron: Object.keys(cron), del: typeof cron.delete, put: typeof api.ledger.policies.putSendPolicy, got: await sessions.get("s1") }) });
    } };`;
    const entry = await plugin("reader", { id: "reader", provides: { tools: ["peek"] }, permissions: { ledger: "read" } }, source);
    const loaded = await load([entry]);
    if (!loaded.ok) throw new Error(lines(loaded).join("\n"));
    const deleted: string[] = [];
    const repository = { get: async (id: string) => ({ id }), list: async () => [], delete: async (id: string) => deleted.push(id), putSendPolicy: async () => undefined };
    loaded.value.bind({ ledger: { sessions: repository, turns: repository, events: repository, runs: repository, policies: repository, cron: repository, tasks: repository } as never, logger: () => ({ debug() {}, info() {}, warn() {}, error() {} }) });
    expect(await loaded.value.tools()[0]!.execute({}, toolContext())).toEqual({ cron: ["get", "list"], del: "undefined", put: "undefined", got: { id: "s1" } });
    expect(deleted).toEqual([]);
  });

  it("refuses a plugin that registers the same tool twice, or a tool whose alias is its other tool's name", async () => {
    const source = `const t = (name, aliases) => ({ name, aliases, description: "t", parameters: null, execute: async () => 1 });
export default { kind: "nahida-plugin", id: "twice-tool", register(api) { api.tool(t("one")); api.tool(t("one")); } };`;
    const twice = await plugin("twice-tool", { id: "twice-tool", provides: { tools: ["one"] } }, source);
    const alias = await plugin("alias-tool", { id: "alias-tool", provides: { tools: ["two", "three"] } }, source.replace('"twice-tool"', '"alias-tool"').replace('api.tool(t("one")); api.tool(t("one"));', 'api.tool(t("two", ["three"])); api.tool(t("three"));'));
    expect(lines(await load([twice, alias]))).toEqual(["plugin twice-tool: registers tool one twice", "plugin alias-tool: tool name three is taken by another of its tools"]);
  });
});
